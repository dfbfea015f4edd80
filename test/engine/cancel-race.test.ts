import { pollUntil } from '../responses/helpers';
import { useEngineUnderTest } from './engine-under-test';

/**
 * api-decisions 15: a cancel that loses the race with completion is a 400 `response.not_cancellable`, not a 200
 * carrying `completed`. The race is made certain: the vendor call returns its finished outcome only once the
 * cancel request is recorded, ignoring the abort as a call that had already finished would.
 */
describe('responses: a cancel that loses the race with completion', () => {
  const under = useEngineUnderTest();

  it('answers 400 response.not_cancellable and leaves the Response completed', async () => {
    await under.start((real) => ({
      ...real,
      // The embedded engine passes its activity context as a second argument (engine/activity-context.ts).
      startAndCallProvider: async (input: { responseId: string }, context?: unknown) => {
        const outcome = await (
          real.startAndCallProvider as (
            input: { responseId: string },
            context?: unknown,
          ) => ReturnType<typeof real.startAndCallProvider>
        )(input, context);
        await pollUntil(
          () =>
            under.app.db
              .selectFrom('responses')
              .select('cancel_requested_at')
              .where('id', '=', input.responseId)
              .executeTakeFirstOrThrow(),
          (row) => row.cancel_requested_at !== null,
        );
        return outcome;
      },
    }));
    const created = await under.app.request('POST', '/v2/responses', {
      key: under.key,
      body: { model: 'dev-echo', input: 'finished first' },
    });
    await pollUntil(
      () => under.app.request('GET', `/v2/responses/${created.body.id}`, { key: under.key }),
      (reply) => reply.body.status === 'in_progress',
    );
    const cancel = await under.app.request('POST', `/v2/responses/${created.body.id}/cancel`, { key: under.key });
    expect(cancel.status).toBe(400);
    expect(cancel.body.error.code).toBe('response.not_cancellable');
    const final = await under.app.request('GET', `/v2/responses/${created.body.id}`, { key: under.key });
    expect(final.body).toMatchObject({ status: 'completed', output: [{ content: [{ text: 'finished first' }] }] });
  });
});
