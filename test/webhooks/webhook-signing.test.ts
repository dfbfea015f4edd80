import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { newId } from '../../src/ids';
import { createWebhookSender } from '../../src/webhooks/webhook-sender';
import { createSecretBox, formatSecret, signatureOf } from '../../src/webhooks/webhook-signing';
import { createWebhookSigningService } from '../../src/webhooks/webhook-signing.service';
import { postTranscription, settle, toneWav } from '../audio/audio-fixtures';
import { ADMIN_TOKEN, TestApp } from '../support/harness';
import { startReceiver, type ReceivedRequest, type Receiver } from './receiver';

/**
 * Opt-in Standard Webhooks signing (api-decisions 33), verified with the `standardwebhooks` package (the reference
 * JavaScript library of https://www.standardwebhooks.com) as a receiver would verify it.
 */
const SIGNATURE_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'];
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The signatures of `webhook-signature` (space-separated, one per secret). */
const signaturesOf = (request: ReceivedRequest) => String(request.headers['webhook-signature']).split(' ');

/** What a receiver hands its Standard Webhooks library: the raw body and the headers. */
const verifyWith = (secret: string, request: ReceivedRequest) =>
  new Webhook(secret).verify(request.body, request.headers as Record<string, string>);

describe('signing secrets: sealed at rest, signatures as the standard has them', () => {
  it('a sealed secret opens with its key and account only, and its text does not contain the secret', () => {
    const box = createSecretBox('k'.repeat(40));
    const secret = randomBytes(32);
    const sealed = box.seal(secret, 'acct_a');
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain(secret.toString('base64'));
    expect(sealed).not.toContain(secret.toString('base64url'));
    expect(box.open(sealed, 'acct_a').equals(secret)).toBe(true);
    // Sealed twice, two texts (a fresh IV each time).
    expect(box.seal(secret, 'acct_a')).not.toBe(sealed);
    expect(() => box.open(sealed, 'acct_b')).toThrow(/WEBHOOK_SECRET_KEY/);
    expect(() => createSecretBox('x'.repeat(40)).open(sealed, 'acct_a')).toThrow(/WEBHOOK_SECRET_KEY/);
    const [version, iv, text, tag] = sealed.split('.');
    const flipped = Buffer.from(text!, 'base64url');
    flipped[0]! ^= 1;
    expect(() => box.open([version, iv, flipped.toString('base64url'), tag].join('.'), 'acct_a')).toThrow(
      /WEBHOOK_SECRET_KEY/,
    );
  });

  it("our signature is the standardwebhooks library's, byte for byte", () => {
    const secret = randomBytes(32);
    const body = JSON.stringify({ response_id: 'resp_1', status: 'completed', status_at: 1_763_800_000 });
    expect(signatureOf(secret, 'wh_1', 1_763_800_000, body)).toBe(
      new Webhook(formatSecret(secret)).sign('wh_1', new Date(1_763_800_000_000), body),
    );
  });
});

describe('Standard Webhooks signing of an account (opt-in)', () => {
  let app: TestApp;
  let receiver: Receiver;
  /** Every line the app logged, at every level. */
  const logLines: string[] = [];
  let signer: { accountId: string; key: string };
  let plain: { accountId: string; key: string };
  /** Every secret any reply gave, to look for afterwards in logs and replies. */
  const secretsSeen: string[] = [];

  beforeAll(async () => {
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    });
    app = await TestApp.start({ logger: pino({ level: 'trace' }, stream) });
    receiver = await startReceiver();
    signer = await app.createAccount({ name: 'signs its webhooks' });
    plain = await app.createAccount({ name: 'does not' });
  });
  afterAll(async () => {
    await app?.close();
    await receiver?.close();
  });

  /** The first request the receiver got on `path`, waiting for it. */
  async function received(path: string): Promise<ReceivedRequest> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const request = receiver.requests.find((candidate) => candidate.path === path);
      if (request) return request;
      if (Date.now() > deadline) throw new Error(`no webhook on ${path}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  let hooks = 0;
  /** A background Response with a webhook, and the webhook it sent. */
  async function responseWebhook(account: { key: string }): Promise<{ id: string; request: ReceivedRequest }> {
    const path = `/hooks/${++hooks}`;
    const created = await app.request('POST', '/v2/responses', {
      key: account.key,
      body: { model: 'dev-echo', input: 'sign me', metadata: { webhook_url: receiver.url + path } },
    });
    expect(created.status).toBe(200);
    return { id: created.body.id, request: await received(path) };
  }

  const deliveryOf = (resourceId: string) =>
    app.db.selectFrom('webhook_deliveries').selectAll().where('resource_id', '=', resourceId).executeTakeFirstOrThrow();

  /**
   * The delivery once its sender has recorded the receiver's answer. The sender writes it after the POST returns, so
   * after the receiver saw the request (what the test awaits): read until it is no longer pending, for 10 s at most.
   */
  const settledDelivery = async (resourceId: string) => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const delivery = await deliveryOf(resourceId);
      if (delivery.status !== 'pending' || Date.now() > deadline) return delivery;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  const enable = async (account: { key: string }) => {
    const reply = await app.request('POST', '/v2/organization/webhook-signing', { key: account.key });
    if (reply.body.secret) secretsSeen.push(reply.body.secret);
    return reply;
  };
  const rotate = async (account: { key: string }, body?: unknown, headers?: Record<string, string>) => {
    const reply = await app.request('POST', '/v2/organization/webhook-signing/rotate', {
      key: account.key,
      body,
      headers,
    });
    if (reply.body.secret) secretsSeen.push(reply.body.secret);
    return reply;
  };

  it('is off by default: GET says so, and webhooks carry no webhook-* header', async () => {
    const status = await app.request('GET', '/v2/organization/webhook-signing', { key: plain.key });
    expect(status.status).toBe(200);
    expect(status.body).toEqual({
      object: 'organization.webhook_signing',
      enabled: false,
      scheme: 'standard-webhooks-v1',
      secret_created_at: null,
      previous_secret_expires_at: null,
    });
    const { request } = await responseWebhook(plain);
    expect(Object.keys(request.headers).filter((name) => name.startsWith('webhook-'))).toEqual([]);
    expect(() => verifyWith(formatSecret(randomBytes(32)), request)).toThrow(WebhookVerificationError);
  });

  it('turned on, answers its secret once; the webhooks then verify with standardwebhooks, webhook-id being the delivery id', async () => {
    const before = Math.floor(Date.now() / 1000);
    const enabled = await enable(signer);
    expect(enabled.status).toBe(201);
    expect(enabled.headers.get('cache-control')).toBe('no-store');
    expect(enabled.body).toEqual({
      object: 'organization.webhook_signing',
      enabled: true,
      scheme: 'standard-webhooks-v1',
      secret_created_at: expect.any(Number),
      previous_secret_expires_at: null,
      secret: expect.stringMatching(/^whsec_/),
    });
    const secret: string = enabled.body.secret;
    expect(secret.slice('whsec_'.length)).toMatch(BASE64);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(enabled.body.secret_created_at).toBeGreaterThanOrEqual(before);

    const { id, request } = await responseWebhook(signer);
    const payload = verifyWith(secret, request);
    expect(payload).toEqual({ response_id: id, status: 'completed', status_at: expect.any(Number) });
    expect(JSON.parse(request.body)).toEqual(payload);
    // One delivery per resource: its id is the message id, the same whichever process or attempt sends it.
    expect(request.headers['webhook-id']).toBe((await deliveryOf(id)).id);
    expect(Number(request.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(before);
    expect(Number(request.headers['webhook-timestamp'])).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);
    expect((await settledDelivery(id)).status).toBe('delivered');

    // The other account's webhooks stay unsigned.
    const other = await responseWebhook(plain);
    expect(other.request.headers['webhook-signature']).toBeUndefined();
  });

  it('signs asynchronous transcription callbacks too', async () => {
    const status = await app.request('GET', '/v2/organization/webhook-signing', { key: signer.key });
    expect(status.body.enabled).toBe(true);
    const secret = secretsSeen.at(-1)!;
    const submitted = await postTranscription(
      app.baseUrl,
      signer.key,
      { bytes: toneWav(1, [[0.1, 0.5]]), name: 'tone.wav' },
      { model: 'dev-stt-async', callback_url: `${receiver.url}/stt` },
    );
    expect(submitted.status).toBe(200);
    const id = submitted.body.request_id;
    expect(await settle({ app, key: signer.key }, id)).toBe('completed');
    const callback = await received('/stt');
    expect(verifyWith(secret, callback)).toEqual({
      request_id: id,
      status: 'completed',
      status_at: expect.any(Number),
    });
    expect(callback.headers['webhook-id']).toBe((await deliveryOf(id)).id);
  });

  it('does not verify with a wrong secret, a changed body, another id or an old timestamp', async () => {
    const secret = secretsSeen.at(-1)!;
    const { request } = await responseWebhook(signer);
    expect(verifyWith(secret, request)).toBeTruthy();
    const wrongSecret = formatSecret(randomBytes(32));
    expect(() => verifyWith(wrongSecret, request)).toThrow(WebhookVerificationError);
    expect(() => verifyWith(wrongSecret, request)).toThrow('No matching signature found');
    expect(() => verifyWith(secret, { ...request, body: request.body.replace('completed', 'cancelled') })).toThrow(
      'No matching signature found',
    );
    expect(() =>
      verifyWith(secret, {
        ...request,
        headers: { ...request.headers, 'webhook-id': `${request.headers['webhook-id']}x` },
      }),
    ).toThrow('No matching signature found');
    const oldTimestamp = String(Number(request.headers['webhook-timestamp']) - 600);
    expect(() =>
      verifyWith(secret, { ...request, headers: { ...request.headers, 'webhook-timestamp': oldTimestamp } }),
    ).toThrow(WebhookVerificationError);
  });

  it('a delivery claimed by one process and sent by another keeps its webhook-id', async () => {
    const secret = secretsSeen.at(-1)!;
    const resourceId = newId('resp');
    // Claimed and never attempted, as a process that ended while the delivery waited its turn leaves it.
    const claimed = await createWebhookSender({
      db: app.db,
      allowPrivateNetworks: true,
      logger: pino({ level: 'silent' }),
    }).claim(
      {
        resourceId,
        accountId: signer.accountId,
        url: `${receiver.url}/left-over`,
        payload: { response_id: resourceId, status: 'completed', status_at: Math.floor(Date.now() / 1000) },
      },
      { attempted: false },
    );
    expect(await app.runtime.deps.webhooks.sendLeftOver(0)).toBeGreaterThanOrEqual(1);
    const request = await received('/left-over');
    expect(request.headers['webhook-id']).toBe(claimed!.id);
    expect(verifyWith(secret, request)).toMatchObject({ response_id: resourceId });
  });

  it('rotation: a new secret at once (the old one no longer verifies), or both for a while when asked', async () => {
    const first = secretsSeen.at(-1)!;
    const rotated = await rotate(signer);
    expect(rotated.status).toBe(200);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
    expect(rotated.body).toMatchObject({ enabled: true, previous_secret_expires_at: null, secret: expect.any(String) });
    const second: string = rotated.body.secret;
    expect(second).not.toBe(first);

    const afterRotation = (await responseWebhook(signer)).request;
    expect(verifyWith(second, afterRotation)).toBeTruthy();
    expect(() => verifyWith(first, afterRotation)).toThrow('No matching signature found');
    expect(signaturesOf(afterRotation)).toHaveLength(1);

    // A switch-over: the replaced secret signs beside the new one for an hour.
    const now = Math.floor(Date.now() / 1000);
    const overlapping = await rotate(signer, { keep_previous_seconds: 3600 });
    expect(overlapping.status).toBe(200);
    const third: string = overlapping.body.secret;
    expect(overlapping.body.previous_secret_expires_at).toBeGreaterThanOrEqual(now + 3599);
    expect(overlapping.body.previous_secret_expires_at).toBeLessThanOrEqual(now + 3601 + 5);
    const status = await app.request('GET', '/v2/organization/webhook-signing', { key: signer.key });
    expect(status.body.previous_secret_expires_at).toBe(overlapping.body.previous_secret_expires_at);
    expect(status.body.secret_created_at).toBe(overlapping.body.secret_created_at);

    const duringOverlap = (await responseWebhook(signer)).request;
    expect(signaturesOf(duringOverlap)).toHaveLength(2);
    expect(verifyWith(third, duringOverlap)).toBeTruthy();
    expect(verifyWith(second, duringOverlap)).toBeTruthy();
    expect(() => verifyWith(first, duringOverlap)).toThrow('No matching signature found');

    // Once the overlap has passed, the previous secret signs nothing.
    await app.db
      .updateTable('webhook_signing_secrets')
      .set({ previous_expires_at: new Date(Date.now() - 1000) })
      .where('account_id', '=', signer.accountId)
      .execute();
    expect((await app.request('GET', '/v2/organization/webhook-signing', { key: signer.key })).body).toMatchObject({
      previous_secret_expires_at: null,
    });
    const afterOverlap = (await responseWebhook(signer)).request;
    expect(signaturesOf(afterOverlap)).toHaveLength(1);
    expect(verifyWith(third, afterOverlap)).toBeTruthy();
    expect(() => verifyWith(second, afterOverlap)).toThrow('No matching signature found');

    for (const body of [{ keep_previous_seconds: 86_401 }, { keep_previous_seconds: -1 }, { keep: 1 }]) {
      const refused = await rotate(signer, body);
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe('organization.invalid_request');
    }
  });

  it('never shows the secret again: not in GET, a second enable, a repeated Idempotency-Key, the database or the logs', async () => {
    const status = await app.request('GET', '/v2/organization/webhook-signing', { key: signer.key });
    expect(status.body).not.toHaveProperty('secret');

    const again = await enable(signer);
    expect(again.status).toBe(400);
    expect(again.body).toEqual({
      error: { code: 'organization.webhook_signing_enabled', message: expect.stringContaining('rotate') },
    });

    // No reply is kept for a key: the same Idempotency-Key twice makes two secrets, never a replay of the first.
    const headers = { 'idempotency-key': 'rotate-once' };
    const one = await rotate(signer, {}, headers);
    const two = await rotate(signer, {}, headers);
    expect([one.status, two.status]).toEqual([200, 200]);
    expect(two.body.secret).not.toBe(one.body.secret);
    expect(two.headers.get('idempotent-replayed')).toBeNull();

    // Stored sealed: the row holds none of the secrets it was given.
    const row = await app.db
      .selectFrom('webhook_signing_secrets')
      .selectAll()
      .where('account_id', '=', signer.accountId)
      .executeTakeFirstOrThrow();
    const stored = JSON.stringify(row);
    const current = secretsSeen.at(-1)!;
    expect(row.secret).toMatch(/^v1\./);
    for (const secret of secretsSeen) {
      expect(stored).not.toContain(secret.slice('whsec_'.length));
      expect(stored).not.toContain(Buffer.from(secret.slice('whsec_'.length), 'base64').toString('base64url'));
    }
    expect(verifyWith(current, (await responseWebhook(signer)).request)).toBeTruthy();

    // Nothing the app logged, at any level, carries any of them.
    expect(logLines.length).toBeGreaterThan(10);
    const logged = logLines.join('\n');
    for (const secret of secretsSeen) {
      expect(logged).not.toContain(secret.slice('whsec_'.length));
      expect(logged).not.toContain(Buffer.from(secret.slice('whsec_'.length), 'base64').toString('base64url'));
    }
    // The account's view of its Responses (webhook outcomes) does not either.
    const summaries = await app.request('GET', '/v2/organization/responses', { key: signer.key });
    for (const secret of secretsSeen) expect(JSON.stringify(summaries.body)).not.toContain(secret);
  });

  it('an operator acts for the account with the admin token, as on the other organization routes', async () => {
    const reply = await app.request('GET', '/v2/organization/webhook-signing', {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-switchyard-account': signer.accountId },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.enabled).toBe(true);
  });

  it('turned off: unsigned again, the secrets deleted; rotate is a 400 until it is turned on again', async () => {
    const off = await app.request('DELETE', '/v2/organization/webhook-signing', { key: signer.key });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ enabled: false, secret_created_at: null, previous_secret_expires_at: null });
    expect(
      await app.db
        .selectFrom('webhook_signing_secrets')
        .selectAll()
        .where('account_id', '=', signer.accountId)
        .execute(),
    ).toEqual([]);
    const { request } = await responseWebhook(signer);
    expect(SIGNATURE_HEADERS.filter((name) => name in request.headers)).toEqual([]);

    const refused = await rotate(signer);
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('organization.webhook_signing_disabled');
    expect((await app.request('DELETE', '/v2/organization/webhook-signing', { key: signer.key })).status).toBe(200);

    const onAgain = await enable(signer);
    expect(onAgain.status).toBe(201);
    expect(secretsSeen.slice(0, -1)).not.toContain(onAgain.body.secret);
    expect(verifyWith(onAgain.body.secret, (await responseWebhook(signer)).request)).toBeTruthy();
  });

  it('a secret this process cannot open (another WEBHOOK_SECRET_KEY) is not sent unsigned: the delivery fails, recorded', async () => {
    const account = await app.createAccount({ name: 'sealed elsewhere' });
    expect((await enable(account)).status).toBe(201);
    const resourceId = newId('resp');
    const sender = createWebhookSender({
      db: app.db,
      allowPrivateNetworks: true,
      logger: pino({ level: 'silent' }),
      signing: createWebhookSigningService({ db: app.db, box: createSecretBox('another-key-'.repeat(4)) }),
    });
    const outcome = await sender.send({
      resourceId,
      accountId: account.accountId,
      url: `${receiver.url}/unreadable`,
      payload: { response_id: resourceId, status: 'completed', status_at: 1 },
    });
    expect(outcome).toEqual({ status: 'failed', error: expect.stringContaining('WEBHOOK_SECRET_KEY') });
    expect(await deliveryOf(resourceId)).toMatchObject({ status: 'failed', error: expect.stringContaining('rotate') });
    expect(receiver.requests.filter((request) => request.path === '/unreadable')).toEqual([]);
  });
});
