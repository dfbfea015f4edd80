import { sql } from 'kysely';
import { TestApp, temporalAddress, type ApiReply } from '../support/harness';
import { postTranscription, toneWav } from '../audio/audio-fixtures';

/**
 * Every error path releases what it holds: each billable operation is run once to record the writes it makes
 * (its steps: `INSERT threads`, `UPDATE accounts`, …, its job's included), then again once per step with the
 * database failing exactly that write (the k-th occurrence of that step, once). Whatever failed, once the
 * operation and its job have ended nothing of the account stays held and its ledger adds up.
 *
 * The seam is a trigger the test installs on the tables billable operations write: it raises at the chosen
 * write, as a constraint or a lost connection would, on PGlite and Postgres alike. The fault is counted by a
 * sequence, which a rollback does not undo, so a retry of the failed transaction gets through.
 */
jest.setTimeout(600_000);

const TABLES = [
  'accounts',
  'ledger_holds',
  'ledger_transactions',
  'threads',
  'thread_messages',
  'runs',
  'jobs',
  'job_steps',
  'responses',
  'stream_events',
  'idempotency_keys',
  'conversations',
  'conversation_items',
  'transcriptions',
  'transcription_chunks',
];

async function installFaultSeam(app: TestApp) {
  await sql`create table fault_plan (id integer primary key check (id = 1), target text, fail_at bigint, recording boolean not null, errcode text not null, every boolean not null default false)`.execute(
    app.db,
  );
  await sql`insert into fault_plan values (1, null, null, false, 'P0001', false)`.execute(app.db);
  await sql`create sequence fault_counter`.execute(app.db);
  await sql`create table fault_log (seq bigserial primary key, step text not null)`.execute(app.db);
  await sql`
    create function inject_fault() returns trigger language plpgsql as $$
    declare
      plan record;
      step text := TG_OP || ' ' || TG_TABLE_NAME;
    begin
      select * into plan from fault_plan where id = 1;
      if plan.recording then insert into fault_log (step) values (step); end if;
      if plan.target = step and (nextval('fault_counter') = plan.fail_at or plan.every) then
        raise exception 'injected fault at % #%', step, plan.fail_at using errcode = plan.errcode;
      end if;
      if TG_OP = 'DELETE' then return old; end if;
      return new;
    end $$`.execute(app.db);
  for (const table of TABLES) {
    await sql`create trigger inject_fault before insert or update or delete on ${sql.table(table)} for each row execute function inject_fault()`.execute(
      app.db,
    );
  }
}

const recordSteps = (app: TestApp, recording: boolean) =>
  sql`update fault_plan set recording = ${recording}, target = null, fail_at = null, every = false`.execute(app.db);

/** Fails every `step` from now on with SQLSTATE `errcode`, until disarmed. */
const armEvery = (app: TestApp, step: string, errcode: string) =>
  sql`update fault_plan set recording = false, target = ${step}, fail_at = null, errcode = ${errcode}, every = true`.execute(
    app.db,
  );

/** Fails the `occurrence`-th `step` from now on, once, with SQLSTATE `errcode` (by default an ordinary error). */
async function arm(app: TestApp, step: string, occurrence: number, errcode = 'P0001') {
  await sql`select setval('fault_counter', 1, false)`.execute(app.db);
  await sql`update fault_plan set recording = false, target = ${step}, fail_at = ${occurrence}, errcode = ${errcode}`.execute(
    app.db,
  );
}

/** Disarms the seam; answers whether the armed fault was raised. */
async function disarm(app: TestApp): Promise<boolean> {
  const { rows } = await sql<{ fail_at: string | null; reached: string; is_called: boolean }>`
    select fail_at, last_value as reached, is_called from fault_plan, fault_counter`.execute(app.db);
  await recordSteps(app, false);
  const [plan] = rows;
  return plan!.is_called && plan!.fail_at !== null && Number(plan!.reached) >= Number(plan!.fail_at);
}

interface Operation {
  name: string;
  balance?: number;
  /** Set up before the fault is armed (a thread to run on). */
  prepare?: (context: OperationContext) => Promise<Record<string, string>>;
  run: (context: OperationContext, prepared: Record<string, string>) => Promise<{ status: number; body: unknown }>;
}

interface OperationContext {
  app: TestApp;
  key: string;
  assistantId: number;
}

const post = (
  context: OperationContext,
  path: string,
  body: unknown,
  headers?: Record<string, string>,
): Promise<ApiReply> => context.app.request('POST', path, { key: context.key, body, headers });

/** A streamed reply read to its end (a failure may arrive as the stream's last frame). */
async function postStream(context: OperationContext, path: string, body: unknown) {
  const reply = await fetch(`${context.app.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'x-auth-token': context.key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: reply.status, body: await reply.text().catch((error: Error) => `cut: ${error.message}`) };
}

async function postSpeech(context: OperationContext, idempotencyKey?: string) {
  const reply = await fetch(`${context.app.baseUrl}/v2/audio/speech`, {
    method: 'POST',
    headers: {
      'x-auth-token': context.key,
      'content-type': 'application/json',
      ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}),
    },
    body: JSON.stringify({ model: 'dev-tts', voice: 'en-us', text: 'Hello there.' }),
  });
  return {
    status: reply.status,
    body: await reply.arrayBuffer().then(
      (audio) => audio.byteLength,
      (error: Error) => `cut: ${error.message}`,
    ),
  };
}

let uniqueKey = 0;
const nextKey = () => `fault-${++uniqueKey}-${Date.now()}`;
const chatMessages = [{ role: 'user', content: '/words 3' }];
const wav = toneWav(0.5, [[0, 0.25]]);

const OPERATIONS: Operation[] = [
  {
    name: 'Run on a new thread',
    run: (c) =>
      post(c, '/v2/threads/runs', {
        assistant_id: c.assistantId,
        thread: { messages: [{ role: 'user', content: '/words 3' }] },
      }),
  },
  {
    name: 'Run on an existing thread, with additional messages',
    prepare: async (c) => ({
      thread: (await post(c, '/v2/threads', { messages: [{ role: 'user', content: 'hello' }] })).body.id,
    }),
    run: (c, { thread }) =>
      post(c, `/v2/threads/${thread}/runs`, {
        assistant_id: c.assistantId,
        additional_messages: [{ role: 'user', content: '/words 3' }],
      }),
  },
  {
    // Its second round holds for itself (in the Run's job), after the tool outputs are submitted.
    name: 'Run with a tool call, then its outputs',
    prepare: async (c) => ({
      thread: (await post(c, '/v2/threads', { messages: [{ role: 'user', content: '/call lookup {"q":1}' }] })).body.id,
    }),
    run: async (c, { thread }) => {
      const created = await post(c, `/v2/threads/${thread}/runs`, {
        assistant_id: c.assistantId,
        tools: [{ type: 'function', function: { name: 'lookup' } }],
      });
      if (created.status !== 200) return created;
      const path = `/v2/threads/${thread}/runs/${created.body.id}`;
      const deadline = Date.now() + 15_000;
      let run = created.body;
      while (
        run.status !== 'requires_action' &&
        ['queued', 'in_progress'].includes(run.status) &&
        Date.now() < deadline
      ) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        run = (await c.app.request('GET', path, { key: c.key })).body;
      }
      if (run.status !== 'requires_action') return { status: 200, body: run };
      const callId = run.required_action.submit_tool_outputs.tool_calls[0].id;
      const submit = () =>
        post(c, `${path}/submit_tool_outputs`, { tool_outputs: [{ tool_call_id: callId, output: 'found' }] });
      // A submission that failed stored nothing and the Run still waits: its client submits again.
      const submitted = await submit();
      return submitted.status >= 500 ? submit() : submitted;
    },
  },
  {
    name: 'background Response',
    run: (c) => post(c, '/v2/responses', { model: 'dev-echo', input: '/words 3', max_output_tokens: 10 }),
  },
  {
    name: 'synchronous Response',
    run: (c) =>
      post(c, '/v2/responses', { model: 'dev-echo', input: '/words 3', max_output_tokens: 10, background: false }),
  },
  {
    name: 'Response with an Idempotency-Key',
    run: (c) =>
      post(
        c,
        '/v2/responses',
        { model: 'dev-echo', input: '/words 3', max_output_tokens: 10 },
        { 'Idempotency-Key': nextKey() },
      ),
  },
  // An open cap the balance pays only in part: the hold is placed first, the Response written in a second statement.
  {
    name: 'Response whose open cap is lowered to the balance',
    balance: 50,
    run: (c) => post(c, '/v2/responses', { model: 'dev-echo', input: '/words 100000', background: false }),
  },
  {
    name: 'Response in a conversation',
    prepare: async (c) => ({ conversation: (await post(c, '/v2/conversations', {})).body.id }),
    run: (c, { conversation }) =>
      post(c, '/v2/responses', { model: 'dev-echo', input: '/words 3', conversation, background: false }),
  },
  {
    name: 'streamed Response',
    run: (c) =>
      postStream(c, '/v2/responses', { model: 'dev-echo', input: '/words 3', stream: true, background: false }),
  },
  {
    name: 'chat completion (v2)',
    run: (c) => post(c, '/v2/chat/completions', { model: 'dev-echo', messages: chatMessages }),
  },
  {
    name: 'chat completion with an Idempotency-Key',
    run: (c) =>
      post(c, '/v2/chat/completions', { model: 'dev-echo', messages: chatMessages }, { 'Idempotency-Key': nextKey() }),
  },
  {
    name: 'chat completion (v1)',
    run: (c) => post(c, '/v1/chat/completions', { model: 'dev-echo', messages: chatMessages }),
  },
  {
    name: 'streamed chat completion (OpenAI-compatible)',
    run: (c) =>
      postStream(c, '/openai/v1/chat/completions', { model: 'dev-echo', messages: chatMessages, stream: true }),
  },
  {
    name: 'embedding (v2)',
    run: (c) => post(c, '/v2/embeddings', { model: 'dev-embed', input: 'a few words to embed' }),
  },
  {
    name: 'embeddings of two inputs (OpenAI-compatible)',
    run: (c) => post(c, '/openai/v1/embeddings', { model: 'dev-embed', input: ['one', 'two'] }),
  },
  { name: 'speech', run: (c) => postSpeech(c) },
  { name: 'speech with an Idempotency-Key', run: (c) => postSpeech(c, nextKey()) },
  {
    name: 'synchronous transcription',
    run: (c) => postTranscription(c.app.baseUrl, c.key, { bytes: wav, name: 'tone.wav' }, { model: 'dev-stt' }),
  },
  {
    name: 'asynchronous transcription',
    run: (c) => postTranscription(c.app.baseUrl, c.key, { bytes: wav, name: 'tone.wav' }, { model: 'dev-stt-async' }),
  },
];

// Not under `npm run test:temporal` (test/README.md): a failed activity is retried there on Temporal's policy, with
// its backoff, so the sweep over every write step takes far longer than the suite allows; the creation paths and
// holds it checks are the same code on both engines, run by `npm test` and `npm run test:postgres`.
(temporalAddress ? describe.skip : describe)('billing: faults injected into billable operations', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await TestApp.start();
    await installFaultSeam(app);
  });
  afterAll(async () => {
    await app.close();
  });

  /** A fresh account (so its ledger speaks of one operation only), with an Assistant, and what the operation prepares. */
  async function newContext(operation: Operation) {
    const { key, accountId } = await app.createAccount({ balance: operation.balance ?? 10_000_000 });
    const assistantId = (
      await app.request('POST', '/v2/assistants', { key, body: { model: 'dev-echo', name: 'Echo' } })
    ).body.id;
    const context: OperationContext = { app, key, assistantId };
    return { context, accountId, prepared: (await operation.prepare?.(context)) ?? {} };
  }

  /** Waits for the account's holds to be settled (its jobs ended), then answers what is wrong with its ledger, if anything. */
  async function ledgerProblems(accountId: string): Promise<string[]> {
    const deadline = Date.now() + 20_000;
    const read = async () => {
      const account = await app.db
        .selectFrom('accounts')
        .select(['balance', 'held'])
        .where('id', '=', accountId)
        .executeTakeFirstOrThrow();
      const holds = await app.db
        .selectFrom('ledger_holds')
        .select(['operation_key', 'amount'])
        .where('account_id', '=', accountId)
        .execute();
      const unfinished = await sql<{ count: string }>`
        select count(*) as count from jobs where status not in ('completed', 'failed') and (
          id in (select id from runs where account_id = ${accountId}) or id in (select id from responses where account_id = ${accountId})
          or id in (select id from transcriptions where account_id = ${accountId}))`.execute(app.db);
      return { account, holds, unfinished: Number(unfinished.rows[0]!.count) };
    };
    let state = await read();
    while ((state.account.held !== 0 || state.holds.length > 0 || state.unfinished > 0) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      state = await read();
    }
    const rows = await app.db
      .selectFrom('ledger_transactions')
      .select(['type', 'amount', 'operation_key'])
      .where('account_id', '=', accountId)
      .execute();
    const credits = rows.filter((row) => row.type === 'credit').reduce((sum, row) => sum + row.amount, 0);
    const debits = rows.filter((row) => row.type === 'debit');
    const problems: string[] = [];
    if (state.account.held !== 0) problems.push(`held ${state.account.held}`);
    if (state.holds.length > 0)
      problems.push(`open holds ${state.holds.map((hold) => `${hold.operation_key}=${hold.amount}`).join(', ')}`);
    if (state.unfinished > 0) problems.push(`${state.unfinished} job(s) not ended`);
    const debited = debits.reduce((sum, row) => sum + row.amount, 0);
    if (state.account.balance !== credits - debited)
      problems.push(`balance ${state.account.balance} ≠ credits ${credits} − debits ${debited}`);
    if (new Set(debits.map((row) => row.operation_key)).size !== debits.length)
      problems.push('an operation debited twice');
    return problems;
  }

  describe('a failure at any step of a billable operation leaves nothing held', () => {
    /** The steps an operation makes, in order of first appearance, each with how many times it occurs. */
    async function stepsOf(operation: Operation): Promise<Array<[string, number]>> {
      const { context, accountId, prepared } = await newContext(operation);
      await sql`delete from fault_log`.execute(app.db);
      await recordSteps(app, true);
      const reply = await operation.run(context, prepared);
      expect(reply.status).toBe(200);
      expect(await ledgerProblems(accountId)).toEqual([]);
      await recordSteps(app, false);
      const { rows } = await sql<{ step: string }>`select step from fault_log order by seq`.execute(app.db);
      const counts = new Map<string, number>();
      for (const { step } of rows) counts.set(step, (counts.get(step) ?? 0) + 1);
      return [...counts];
    }

    it.each(OPERATIONS.map((operation) => [operation.name, operation] as const))('%s', async (_name, operation) => {
      const steps = await stepsOf(operation);
      if (process.env.FAULT_STEPS)
        process.stderr.write(`${operation.name}: ${steps.map(([step, count]) => `${step}×${count}`).join(', ')}\n`);
      expect(steps.length).toBeGreaterThan(0);
      const problems: string[] = [];
      let injected = 0;
      for (const [step, count] of steps) {
        for (let occurrence = 1; occurrence <= count; occurrence++) {
          const { context, accountId, prepared } = await newContext(operation);
          await arm(app, step, occurrence);
          const reply = await operation.run(context, prepared);
          // The operation's own writes end with the reply or its job; a fault in its job is retried by the engine.
          const found = await ledgerProblems(accountId);
          const fired = await disarm(app);
          if (fired) injected++;
          if (reply.status !== 200 && reply.status < 500)
            problems.push(
              `${step} #${occurrence}: answered ${reply.status} ${JSON.stringify(reply.body).slice(0, 160)}`,
            );
          if (found.length > 0) problems.push(`${step} #${occurrence} (reply ${reply.status}): ${found.join('; ')}`);
        }
      }
      expect(injected).toBeGreaterThan(0);
      expect(problems).toEqual([]);
    });
  });

  describe('a deadlock or serialization failure while creating is retried inside the service', () => {
    // The writes a creation makes before it answers, where Postgres may pick it as a deadlock's victim.
    const CASES: Array<[operation: string, step: string]> = [
      ['Run on a new thread', 'INSERT threads'],
      ['Run on a new thread', 'INSERT ledger_holds'],
      ['Run on an existing thread, with additional messages', 'INSERT runs'],
      ['background Response', 'INSERT responses'],
      ['Response with an Idempotency-Key', 'INSERT idempotency_keys'],
      ['Response with an Idempotency-Key', 'INSERT ledger_holds'],
      ['Response whose open cap is lowered to the balance', 'INSERT responses'],
      ['chat completion (v2)', 'INSERT ledger_holds'],
      ['chat completion (v2)', 'INSERT ledger_transactions'],
      ['embedding (v2)', 'INSERT ledger_transactions'],
      ['speech', 'INSERT ledger_holds'],
      ['synchronous transcription', 'INSERT ledger_holds'],
    ];

    it.each(
      CASES.flatMap(([operation, step]) => ['40P01', '40001'].map((errcode) => [operation, step, errcode] as const)),
    )('%s, at %s (%s): answered 200', async (name, step, errcode) => {
      const operation = OPERATIONS.find((candidate) => candidate.name === name)!;
      const { context, accountId, prepared } = await newContext(operation);
      await arm(app, step, 1, errcode);
      const reply = await operation.run(context, prepared);
      expect(await disarm(app)).toBe(true);
      expect({ status: reply.status, body: reply.status === 200 ? 'ok' : reply.body }).toEqual({
        status: 200,
        body: 'ok',
      });
      expect(await ledgerProblems(accountId)).toEqual([]);
    });

    it('answers 503 with Retry-After, nothing held, when the conflict outlasts every retry', async () => {
      const operation = OPERATIONS.find((candidate) => candidate.name === 'background Response')!;
      const { context, accountId, prepared } = await newContext(operation);
      await armEvery(app, 'INSERT responses', '40001');
      const reply = (await operation.run(context, prepared)) as ApiReply;
      await recordSteps(app, false);
      expect([
        reply.status,
        (reply.body as { error: { code: string } }).error.code,
        reply.headers.get('retry-after'),
      ]).toEqual([503, 'request.busy', '1']);
      expect(await ledgerProblems(accountId)).toEqual([]);
    });
  });
});
