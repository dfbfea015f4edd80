import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { newId } from '../../src/ids';
import { useTestApp } from '../support/harness';
import { pollUntil, storedRequest } from './helpers';

/**
 * The embedded engine re-runs a job after a crash, replaying recorded activity results by step number. When
 * the re-run takes a different path (a cancel that arrived while the job was orphaned skips startResponse),
 * the step numbers shift: a recorded result must not be handed to a different activity.
 */
describe('responses: embedded engine re-run after a crash', () => {
  const suite = useTestApp();
  let server: http.Server;
  let hookUrl: string;
  const hooks: any[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        hooks.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(204).end();
      });
    });
    server.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    hookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('a cancel that arrived while the job was orphaned still ends cancelled and sends the webhook', async () => {
    const id = newId('resp');
    const request = storedRequest('hello there');
    // State left by a process that died after the vendor call was recorded (step 1) and before finalisation;
    // another replica then recorded a cancel request.
    await suite.app.db
      .insertInto('responses')
      .values({
        id,
        account_id: suite.accountId,
        status: 'in_progress',
        background: true,
        model: 'dev-echo',
        vendor: 'dev',
        request: JSON.stringify(request),
        metadata: JSON.stringify({ webhook_url: hookUrl }),
        started_at: new Date(),
        cancel_requested_at: new Date(),
      })
      .execute();
    await suite.app.db
      .insertInto('stream_events')
      .values([
        {
          stream_id: id,
          first_seq: 0,
          last_seq: 0,
          events: JSON.stringify([
            { type: 'response.created', sequence_number: 0, response: { id, status: 'queued' } },
          ]),
        },
        {
          stream_id: id,
          first_seq: 1,
          last_seq: 1,
          events: JSON.stringify([
            { type: 'response.in_progress', sequence_number: 1, response: { id, status: 'in_progress' } },
          ]),
        },
      ])
      .execute();
    await suite.app.db
      .insertInto('jobs')
      .values({
        id,
        kind: 'response',
        status: 'running',
        attempts: 1,
        lease_owner: 'a-dead-process',
        lease_expires_at: sql<Date>`now() - interval '1 minute'`,
        launched_at: new Date(),
        cancel_requested_at: new Date(),
      })
      .execute();
    const recordedOutcome = {
      kind: 'generated',
      status: 'completed',
      output: [],
      inputTokens: 2,
      outputTokens: 2,
      nextSequence: 2,
    };
    await suite.app.db
      .insertInto('job_steps')
      .values({ job_id: id, step: 1, activity: 'callProvider', result: JSON.stringify(recordedOutcome) })
      .execute();

    await suite.app.runtime.deps.engine.launch({ id, kind: 'response' });
    const job = await pollUntil(
      () =>
        suite.app.db.selectFrom('jobs').select(['status', 'attempts']).where('id', '=', id).executeTakeFirstOrThrow(),
      (row) => row.status === 'completed' || row.status === 'failed',
    );
    expect(job).toEqual({ status: 'completed', attempts: 2 });

    const row = await suite.app.db
      .selectFrom('responses')
      .select(['status', 'usage'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('cancelled');
    // The job's step claims the webhook; the process's webhook dispatcher sends it.
    await suite.app.runtime.deps.webhooks.idle();
    const deliveries = await suite.app.db
      .selectFrom('webhook_deliveries')
      .select(['status'])
      .where('resource_id', '=', id)
      .execute();
    expect(deliveries).toEqual([{ status: 'delivered' }]);
    expect(hooks).toEqual([{ response_id: id, status: 'cancelled', status_at: expect.any(Number) }]);
  });
});
