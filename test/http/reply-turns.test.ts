import { createTurnScheduler, TURN_BYTES } from '../../src/event-loop-turns';
import { useTestApp } from '../support/harness';
import { countTurns } from '../support/turns';

/**
 * Large replies are built in slices spread over turns of the event loop, process-wide (src/event-loop-turns.ts), so
 * a crowd of readers of large pages cannot make turns of hundreds of milliseconds in which /healthz waits. Counted
 * in turns (a setImmediate ticker), not in milliseconds.
 */
describe('turn scheduler', () => {
  it('starts at most its bytes of slices per turn, in arrival order, whoever asks', async () => {
    const scheduler = createTurnScheduler(TURN_BYTES);
    const ticker = countTurns();
    const started: Array<[string, number]> = [];
    const slices = ['a', 'b', 'c', 'd'].flatMap((reader) =>
      [1, 2, 3].map(() => scheduler.slice(TURN_BYTES / 2).then(() => started.push([reader, ticker.turns]))),
    );
    await Promise.all(slices);
    ticker.stop();
    // Twelve half-turn slices: two per turn, six turns, none sharing a turn with a third.
    const perTurn = new Map<number, number>();
    for (const [, turn] of started) perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
    expect([...perTurn.values()]).toEqual([2, 2, 2, 2, 2, 2]);
    expect(started.map(([reader]) => reader).join('')).toBe('aaabbbcccddd');
    expect(scheduler.waiting).toBe(0);
  });

  it('starts a slice larger than a turn alone', async () => {
    const scheduler = createTurnScheduler(TURN_BYTES);
    const ticker = countTurns();
    const turns = await Promise.all(
      [3 * TURN_BYTES, 1, 1].map((bytes) => scheduler.slice(bytes).then(() => ticker.turns)),
    );
    ticker.stop();
    expect(turns[1]).toBeGreaterThan(turns[0]!);
    expect(turns[2]).toBe(turns[1]);
  });
});

describe('pages of large items in the app', () => {
  const suite = useTestApp();
  const ITEM_BYTES = 450 * 1000;

  it('are read and serialised across turns: readers of 4 MiB pages share the turns, a slice each', async () => {
    const created = await suite.app.request('POST', '/v2/conversations', { key: suite.key, body: {} });
    const item = { type: 'message', role: 'user', content: 'q'.repeat(ITEM_BYTES) };
    const added = await suite.app.request('POST', `/v2/conversations/${created.body.id}/items`, {
      key: suite.key,
      body: { items: Array.from({ length: 9 }, () => item) },
    });
    expect(added.status).toBe(200);
    // Turns while some page is being built (admitted by the reply budget until its reply is handed over).
    const budget = suite.app.runtime.deps.replyBudget;
    const building = countTurns(() => budget.inUse > 0);
    const READERS = 4;
    const pages = await Promise.all(
      Array.from({ length: READERS }, () =>
        suite.app.request('GET', `/v2/conversations/${created.body.id}/items?limit=100`, { key: suite.key }),
      ),
    );
    building.stop();
    for (const page of pages) {
      expect([page.status, page.body.data.length, page.body.has_more]).toEqual([200, 9, false]);
      expect(page.body.data[0].content[0].text).toHaveLength(ITEM_BYTES);
      expect([page.body.first_id, page.body.last_id]).toEqual([page.body.data[0].id, page.body.data[8].id]);
    }
    // Each item of each page is read in a turn of its own (a 450 KB slice leaves no room for another in a turn)
    // and serialised in another: at least 9 × 4 turns. Before, each page was read in one query and serialised in
    // one JSON.stringify, a few turns per page.
    expect(building.turns).toBeGreaterThanOrEqual(9 * READERS);
  });
});
