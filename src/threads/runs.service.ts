import { recordJobStarted, type Metrics } from '../metrics/metrics';
import { assistantFunctionTools } from '../assistants/assistant-tools';
import { findAssistant } from '../assistants/assistants.repository';
import { holdForGeneration, outputCapOf } from '../billing/generation-hold';
import type { Ledger } from '../billing/ledger';
import type { CatalogModel } from '../catalog/catalog-types';
import { promptTokenBound } from '../responses/prompt';
import type { Catalog } from '../catalog/catalog.service';
import { transactionRetryingConflicts } from '../db/conflict-retry';
import { inTransaction, type Db } from '../db/database';
import { toPageRequest, type Page, type PageQuery } from '../db/keyset-page';
import type { Engine, JobAdmission } from '../engine/engine';
import { invalidRequest, notFound } from '../errors';
import { newId } from '../ids';
import { stillRunning, type Idempotency, type IdempotentCall } from '../idempotency/idempotency';
import { submitToolOutputsSignal } from '../../workflows/definitions';
import * as runs from './runs.repository';
import type { CreateRunBody, CreateThreadAndRunBody } from './runs.schema';
import { isActiveRunStatus, runRoundOperationKey, type RunRequest, type RunRow } from './runs.table';
import { buildRunPrompt } from './run-prompt';
import { findThread, insertMessages, insertThread, type NewThreadMessage } from './threads.repository';
import type { MessageInput } from './threads.schema';
import { messageInputToNew } from './threads.service';

export interface RunsServiceDeps {
  db: Db;
  catalog: Catalog;
  ledger: Ledger;
  engine: Engine;
  idempotency: Idempotency;
  metrics?: Metrics;
}

/**
 * Legacy Runs: each is one durable job (src/threads/run.job.ts). The service writes the Run and its job row
 * together, then launches it; cancel and submit_tool_outputs are stored first and then signalled, so the
 * workflow reads what they changed from the database.
 */
/** A Run creation's outcome: `replayed` when an Idempotency-Key matched an earlier request (nothing new was started). */
export interface Created {
  run: RunRow;
  replayed: boolean;
}

export function createRunsService(deps: RunsServiceDeps) {
  const { db, catalog, ledger, engine } = deps;

  async function create(
    accountId: string,
    threadId: string,
    body: CreateRunBody,
    idempotent?: IdempotentCall,
  ): Promise<Created> {
    const replay = idempotent && (await findIdempotent(idempotent));
    if (replay) return { run: replay, replayed: true };
    await requireThread(accountId, threadId);
    const { row: prepared, model } = await prepare(accountId, body);
    const run = await createOnce(accountId, idempotent, prepared.id, async (trx, admission) => {
      if (body.additional_messages?.length)
        await insertMessages(trx, { threadId, accountId, messages: body.additional_messages.map(messageInputToNew) });
      const inserted = await runs.insertRun(trx, { ...prepared, thread_id: threadId }, admission);
      // Throwing rolls the additional messages back with it.
      if (!inserted)
        throw invalidRequest(
          'run',
          `Thread ${threadId} already has an active Run; wait for it to end or cancel it.`,
          'active_run_exists',
        );
      await holdFirstRound(trx, inserted, model, body.max_completion_tokens);
      return inserted;
    });
    if (!run.created) return { run: run.replay, replayed: true };
    recordJobStarted(deps.metrics, 'run', model);
    return { run: run.created, replayed: false };
  }

  /** A thread of `thread.messages` and a Run of it, atomically (POST /v2/threads/runs). */
  async function createThreadAndRun(
    accountId: string,
    body: CreateThreadAndRunBody,
    idempotent?: IdempotentCall,
  ): Promise<Created> {
    const replay = idempotent && (await findIdempotent(idempotent));
    if (replay) return { run: replay, replayed: true };
    const { row: prepared, model } = await prepare(accountId, body);
    const run = await createOnce(accountId, idempotent, prepared.id, async (trx, admission) => {
      const thread = await insertThread(trx, { accountId, metadata: body.thread?.metadata ?? {} });
      const messages: NewThreadMessage[] = [...(body.thread?.messages ?? []), ...(body.additional_messages ?? [])].map(
        (message: MessageInput) => messageInputToNew(message),
      );
      if (messages.length > 0) await insertMessages(trx, { threadId: thread.id, accountId, messages });
      const inserted = (await runs.insertRun(trx, { ...prepared, thread_id: thread.id }, admission))!;
      await holdFirstRound(trx, inserted, model, body.max_completion_tokens);
      return inserted;
    });
    if (!run.created) return { run: run.replay, replayed: true };
    recordJobStarted(deps.metrics, 'run', model);
    return { run: run.created, replayed: false };
  }

  /**
   * Writes a Run and its job (engine.admit) in one transaction, with its Idempotency-Key claimed in it when it has
   * one (docs/api-decisions.md 17): the key, the Run, its job, its messages and its hold commit together. A
   * concurrent request that won the key makes this one create nothing and answer that request's Run.
   */
  async function createOnce(
    accountId: string,
    idempotent: IdempotentCall | undefined,
    runId: string,
    write: (trx: Db, admission: JobAdmission) => Promise<RunRow>,
  ): Promise<{ created: RunRow; replay?: undefined } | { created?: undefined; replay: RunRow }> {
    const created = await engine.admit({ kind: 'run', accountId }, async (admission) => {
      const written = await transactionRetryingConflicts(db, async (trx) => {
        if (idempotent && !(await deps.idempotency.claimCreation(trx, idempotent, runId))) return undefined;
        return write(trx, admission);
      });
      return { jobId: written?.id, result: written };
    });
    if (created) return { created };
    const replay = await findIdempotent(idempotent!);
    if (!replay) throw stillRunning();
    return { replay };
  }

  /** The Run a live key created, as it stands now (400 for another body; 404 when its thread was deleted since). */
  async function findIdempotent(idempotent: IdempotentCall): Promise<RunRow | undefined> {
    const id = await deps.idempotency.findCreation(idempotent);
    if (id === undefined) return undefined;
    const run = await runs.loadRun(db, id);
    if (!run) throw notFound('run', `The Run created with this Idempotency-Key (${id}) was deleted with its thread.`);
    return run;
  }

  /**
   * The hold of the Run's first model call (docs/architecture.md, "Money: holds"), in the transaction that writes the Run: a
   * 402 leaves nothing written. Each later round holds for itself (run.activities.ts); each round's
   * debit settles its hold.
   */
  async function holdFirstRound(
    trx: Db,
    run: RunRow,
    model: CatalogModel,
    cap: number | null | undefined,
  ): Promise<void> {
    const prompt = await buildRunPrompt(trx, run, model.contextWindow);
    await holdForGeneration(
      { hold: (request) => ledger.hold(request, trx) },
      {
        accountId: run.account_id,
        operationKey: runRoundOperationKey(run.id, 0),
        jobId: run.id,
        price: model.price,
        inputBound: promptTokenBound({ ...prompt, tools: run.request.tools }),
        cap: outputCapOf(cap, model.maxOutput),
        capFixed: cap != null,
      },
    );
  }

  /** The Run's row but its thread: the Assistant and the model resolved. */
  async function prepare(accountId: string, body: CreateRunBody) {
    const assistant = await findAssistant(db, accountId, body.assistant_id);
    if (!assistant) throw notFound('assistant', `No assistant with id ${body.assistant_id}.`);
    const model = catalog.requireUsableModel(body.model ?? assistant.model, 'run', 'llm');
    const tools = assistantFunctionTools(body.tools ?? assistant.tools ?? []);
    if (tools.length > 0 && !model.functionCalling)
      throw invalidRequest('run', `Model ${model.code} does not support function calling.`);
    if (body.max_completion_tokens != null && model.maxOutput > 0 && body.max_completion_tokens > model.maxOutput) {
      throw invalidRequest('run', `max_completion_tokens exceeds the limit of ${model.code} (${model.maxOutput}).`);
    }
    const request: RunRequest = {
      additional_instructions: body.additional_instructions ?? null,
      tools,
      temperature: body.temperature ?? assistant.temperature ?? null,
      top_p: body.top_p ?? null,
      reasoning_effort: assistant.reasoning_effort ?? null,
      max_completion_tokens: body.max_completion_tokens ?? null,
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      message_limit: body.message_limit ?? null,
    };
    const row = {
      id: newId('run'),
      account_id: accountId,
      assistant_id: assistant.id,
      model: model.code,
      vendor: model.vendor,
      instructions: body.instructions !== undefined ? body.instructions : assistant.instructions,
      request: JSON.stringify(request),
      metadata: JSON.stringify(body.metadata ?? {}),
    };
    return { row, model };
  }

  async function get(accountId: string, threadId: string, runId: string): Promise<RunRow> {
    await requireThread(accountId, threadId);
    const run = await runs.findRun(db, accountId, threadId, runId);
    if (!run) throw notFound('run', `No run with id ${runId} in thread ${threadId}.`);
    return run;
  }

  async function list(accountId: string, threadId: string, query: PageQuery): Promise<Page<RunRow>> {
    await requireThread(accountId, threadId);
    const cursorSeq = async (cursor: string) => {
      const seq = await runs.findRunSeq(db, threadId, cursor);
      if (seq === undefined) throw invalidRequest('run', `The cursor ${cursor} is not the id of a run of this thread.`);
      return seq;
    };
    return runs.listRuns(db, threadId, await toPageRequest(query, cursorSeq));
  }

  async function update(
    accountId: string,
    threadId: string,
    runId: string,
    metadata: Record<string, string>,
  ): Promise<RunRow> {
    await get(accountId, threadId, runId);
    return (await runs.updateRunMetadata(db, accountId, threadId, runId, metadata))!;
  }

  /**
   * An active Run goes to `cancelling` at once and its workflow is told; it ends `cancelled` when the workflow has
   * stopped its vendor call. Cancelling a cancelled (or cancelling) Run again answers it as it is; a Run that ended
   * otherwise is 400 `run.not_cancellable`.
   */
  async function cancel(accountId: string, threadId: string, runId: string): Promise<RunRow> {
    const run = await get(accountId, threadId, runId);
    if (run.status === 'cancelled' || run.status === 'cancelling') return run;
    const cancelling = isActiveRunStatus(run.status) ? await runs.markCancelling(db, runId) : undefined;
    if (!cancelling) {
      const current = await get(accountId, threadId, runId);
      if (current.status === 'cancelled') return current;
      throw invalidRequest(
        'run',
        `Run ${runId} is ${current.status} and can no longer be cancelled.`,
        'not_cancellable',
      );
    }
    await engine.cancel({ id: runId, kind: 'run' });
    return cancelling;
  }

  /** Deleting a thread cancels its active Run first (the hook of the threads service). */
  async function cancelActiveRuns(accountId: string, threadId: string): Promise<void> {
    for (const run of await runs.findActiveRuns(db, threadId)) {
      if (run.account_id !== accountId) continue;
      if (await runs.markCancelling(db, run.id)) await engine.cancel({ id: run.id, kind: 'run' });
    }
  }

  /**
   * Every tool call of the Run's required_action needs its output, in one submission; the outputs are stored with
   * the Run back in_progress, then the waiting workflow is woken. Nothing changes on a 400.
   */
  async function submitToolOutputs(
    accountId: string,
    threadId: string,
    runId: string,
    outputs: Array<{ tool_call_id: string; output: string }>,
  ): Promise<RunRow> {
    const run = await get(accountId, threadId, runId);
    if (run.status !== 'requires_action') {
      throw invalidRequest(
        'run',
        `Run ${runId} is ${run.status}; tool outputs are accepted only while it is requires_action.`,
        'not_requires_action',
      );
    }
    const round = run.transcript.at(-1)!;
    const expected = new Set(round.calls.map((call) => call.id));
    const unknown = outputs.filter((output) => !expected.has(output.tool_call_id)).map((output) => output.tool_call_id);
    if (unknown.length > 0)
      throw invalidRequest('run', `Run ${runId} did not ask for tool call(s) ${unknown.join(', ')}.`);
    const given = new Map(outputs.map((output) => [output.tool_call_id, output.output]));
    const missing = [...expected].filter((id) => !given.has(id));
    if (missing.length > 0)
      throw invalidRequest(
        'run',
        `tool_outputs must answer every tool call of the Run; missing: ${missing.join(', ')}.`,
      );
    const transcript = [
      ...run.transcript.slice(0, -1),
      { calls: round.calls.map((call) => ({ ...call, output: given.get(call.id)! })) },
    ];
    const job = { id: runId, kind: 'run' } as const;
    // The embedded engine's wake commits with the outputs: a crash before the delivery below cannot lose it.
    const stored = await inTransaction(db, async (trx) => {
      const row = await runs.storeToolOutputs(trx, runId, run.rounds, transcript);
      if (row) await engine.signal(job, submitToolOutputsSignal, { within: trx });
      return row;
    });
    if (!stored) {
      const current = await get(accountId, threadId, runId);
      const why = current.status === 'requires_action' ? 'its wait for them has expired' : `it is ${current.status}`;
      throw invalidRequest('run', `Run ${runId} no longer accepts tool outputs: ${why}.`, 'not_requires_action');
    }
    // The outputs are stored (on the embedded engine the wake with them): a delivery failing now only delays the
    // Run until its wait reads them. The submission stands, so it is not answered as a failure to resubmit.
    await engine.signal(job, submitToolOutputsSignal).catch(() => undefined);
    return stored;
  }

  async function requireThread(accountId: string, threadId: string) {
    if (!(await findThread(db, accountId, threadId))) throw notFound('thread', `No thread with id ${threadId}.`);
  }

  return { create, createThreadAndRun, get, list, update, cancel, cancelActiveRuns, submitToolOutputs };
}

export type RunsService = ReturnType<typeof createRunsService>;
