import { sql } from 'kysely';
import { useTestApp } from '../support/harness';
import { countTurns } from '../support/turns';

/**
 * PGlite runs every statement in the service's thread. Statements waiting for its one connection get it in turns of
 * the event loop of their own, so a queue of them cannot make one long turn in which nothing else is served. Counted
 * in turns (a setImmediate ticker), not in milliseconds. Postgres: statements run in the server, nothing to count.
 */
describe('statements queued for PGlite', () => {
  const suite = useTestApp();

  it('each start in a turn of the event loop after the one before', async () => {
    const { db, database } = suite.app.runtime.deps;
    if (database.kind !== 'pglite') return;
    const ticker = countTurns();
    const QUEUED = 20;
    const turns = await Promise.all(
      Array.from({ length: QUEUED }, () => sql`select 1`.execute(db).then(() => ticker.turns)),
    );
    ticker.stop();
    // Before, the whole queue ran in the turn of the first: every statement answered in one or two turns.
    expect(new Set(turns).size).toBeGreaterThanOrEqual(QUEUED - 1);
  });
});
