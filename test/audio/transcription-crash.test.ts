import fs from 'node:fs';
import { pollUntil } from '../responses/helpers';
import {
  callServer,
  killServer,
  newServerStorage,
  startServerProcess,
  type ServerProcess,
  type ServerStorage,
} from '../support/crash-server';
import { ADMIN_TOKEN, dropSchema } from '../support/harness';
import { postTranscription, toneWav } from './audio-fixtures';

/**
 * A server killed (SIGKILL) while an asynchronous transcription is processing, then started again on the same
 * storage: the job resumes from its stored upload and completes, its callback state and result intact, billed once.
 */
describe('asynchronous transcription across a crash', () => {
  let storage: ServerStorage;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    storage = await newServerStorage('switchyard-stt-crash-');
  });
  afterAll(async () => {
    await killServer(server);
    fs.rmSync(storage.dataDir, { recursive: true, force: true });
    if (storage.schema) await dropSchema(storage.schema);
  });

  it('a kill during processing: the restarted service finishes it from the stored upload, billed once', async () => {
    server = await startServerProcess(storage);
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const account = await callServer(
      server,
      'POST',
      '/admin/accounts',
      { name: 'stt-crash', balance: 1_000_000 },
      admin,
    );
    const key = (await callServer(server, 'POST', `/admin/accounts/${account.body.id}/keys`, {}, admin)).body
      .key as string;
    const auth = { 'x-auth-token': key };

    // dev-stt-async waits 1.5 s before decoding (`/delay`): the job is processing when the process dies.
    const submitted = await postTranscription(
      server.baseUrl,
      key,
      { bytes: toneWav(3, [[1, 2]]), name: 'tones.wav' },
      { model: 'dev-stt-async', prompt: '/delay 1500', meta: '{"n":1}' },
    );
    expect(submitted.status).toBe(200);
    const id = submitted.body.request_id as string;
    const check = () =>
      callServer(server!, 'GET', `/v2/audio/transcription/check/${id}`, undefined, auth).then((reply) => reply.body);
    await pollUntil(check, (body) => body.status === 'processing', 10_000);
    await killServer(server);

    server = await startServerProcess(storage);
    const final = await pollUntil(check, (body) => ['completed', 'failed'].includes(body.status), 20_000);
    expect(final).toEqual({ request_id: id, status: 'completed' });
    const result = await callServer(server, 'GET', `/v2/audio/transcription/result/${id}`, undefined, auth);
    expect(result.body).toMatchObject({
      duration: 3,
      segments: [{ start: 1, end: 2 }],
      usage: { cost: 3 },
      meta: { n: 1 },
    });
    const transactions = await callServer(server, 'GET', '/v2/organization/transactions?limit=200', undefined, auth);
    const debits = transactions.body.transactions.filter((row: any) => row.metadata.request_id === id);
    expect(debits).toEqual([expect.objectContaining({ type: 'debit', amount: 3 })]);
    const balance = await callServer(server, 'GET', '/v2/organization/balance', undefined, auth);
    expect(balance.body.balance).toBe(1_000_000 - 3);
  }, 60_000);
});
