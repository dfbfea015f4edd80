import { pollUntil } from '../responses/helpers';
import { useEngineUnderTest } from './engine-under-test';

/**
 * The embedded engine records the vendor call's result (job_steps) so a re-run replays it instead of calling
 * the vendor again. A quick call's record waits: dropped once the finalisation has stored the result, written
 * when the flow fails before that; a slow call's record is written at once.
 */
describe('embedded engine: recorded vendor results', () => {
  const under = useEngineUnderTest();
  const app = () => under.app;

  /** An engine counting vendor calls and finalisations, whose first `failFinalizations` finalisations fail. */
  async function startEngine(options: { failFinalizations: number }) {
    const counts = { startAndCallProvider: 0, finalizeResponse: 0 };
    // Records wait up to a minute here, so whether one was dropped does not depend on this machine's speed.
    await under.start(
      (real) => ({
        ...real,
        startAndCallProvider: (...args: Parameters<typeof real.startAndCallProvider>) => {
          counts.startAndCallProvider++;
          return real.startAndCallProvider(...args);
        },
        finalizeResponse: async (input: Parameters<typeof real.finalizeResponse>[0]) => {
          counts.finalizeResponse++;
          if (counts.finalizeResponse <= options.failFinalizations) throw new Error('database unavailable');
          return real.finalizeResponse(input);
        },
      }),
      { recordDelayMs: 60_000 },
    );
    return counts;
  }

  const create = async (input: string) =>
    (await app().request('POST', '/v2/responses', { key: under.key, body: { model: 'dev-echo', input } })).body
      .id as string;
  const settledJob = (id: string) =>
    pollUntil(
      () => app().db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow(),
      (job) => job.status === 'completed' || job.status === 'failed',
    );
  const steps = (id: string) =>
    app().db.selectFrom('job_steps').select(['step', 'activity']).where('job_id', '=', id).execute();
  const stored = (id: string) =>
    app().db.selectFrom('responses').select(['status', 'output']).where('id', '=', id).executeTakeFirstOrThrow();

  it('drops a quick call’s record once the finalisation has stored the result', async () => {
    const counts = await startEngine({ failFinalizations: 0 });
    const id = await create('quick answer');
    expect(await settledJob(id)).toMatchObject({ status: 'completed', attempts: 1 });
    expect(await stored(id)).toMatchObject({ status: 'completed' });
    expect(counts.startAndCallProvider).toBe(1);
    expect(await steps(id)).toEqual([]);
  });

  it('writes the record when the flow fails before finalising, and the retry replays it without calling the vendor', async () => {
    const counts = await startEngine({ failFinalizations: 1 });
    const id = await create('replayed answer');
    expect(await settledJob(id)).toMatchObject({ status: 'completed', attempts: 2 });
    expect(counts).toEqual({ startAndCallProvider: 1, finalizeResponse: 2 });
    expect(await steps(id)).toEqual([{ step: 0, activity: 'startAndCallProvider' }]);
    const row = await stored(id);
    expect(row.status).toBe('completed');
    expect(JSON.stringify(row.output)).toContain('replayed answer');
  });

  it('records a slow call at once', async () => {
    await startEngine({ failFinalizations: 0 });
    // Three words 600 ms apart: the call takes over a second.
    const id = await create('/delay 600 slow to make');
    expect(await settledJob(id)).toMatchObject({ status: 'completed' });
    expect(await steps(id)).toEqual([{ step: 0, activity: 'startAndCallProvider' }]);
  });
});
