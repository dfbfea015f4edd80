import { recordJobFinished, type Metrics } from '../metrics/metrics';
import { type Ledger } from '../billing/ledger';
import { inTransaction, type Db } from '../db/database';
import { abortError, currentActivityContext, type ActivityContext } from '../engine/activity-context';
import { MEDIA_TYPES } from './audio-format';
import {
  billedSeconds,
  heldSecondsOf,
  transcriptionBody,
  transcriptionCharge,
  transcriptionOperationKey,
} from './transcription-result';
import { transcriptionCallbackPayload } from './transcriptions.wire';
import { loadTranscription, markFinal, markProcessing, readChunks } from './transcriptions.repository';
import type { TranscriptionRow } from './transcriptions.table';
import type { Logger } from '../logger';
import type { AudioFormat, TranscriptionModel } from '../providers/provider';
import { vendorFailureOf } from '../providers/provider-errors';
import type { WebhookSender } from '../webhooks/webhook-sender';
import { circuitsOf } from '../routing/circuits';
import { countServed, targetFailovers } from '../routing/failover';
import { drawRoutePlan, type RouteCatalog } from '../routing/route-plan';
import type { RouteFailover, RoutePlan, RouteTarget } from '../../workflows/route-steps';
import type {
  TranscriptionActivities,
  TranscriptionJobInput,
  TranscriptionOutcome,
  TranscriptionState,
} from '../../workflows/transcription.flow';

export interface TranscriptionActivityDeps {
  db: Db;
  logger: Logger;
  metrics?: Metrics;
  catalog: RouteCatalog;
  providers: { transcriptionModel(vendor: string): TranscriptionModel };
  webhooks: WebhookSender;
  /** The ledger of the process; one over `db` when absent. */
  ledger: Ledger;
  heartbeatIntervalMs?: number;
}

const FINAL = ['completed', 'failed'];

/** The activities of an asynchronous transcription's workflow. */
export function createTranscriptionActivities(deps: TranscriptionActivityDeps): TranscriptionActivities {
  const { db } = deps;
  const { ledger } = deps;

  const stateOf = (row: TranscriptionRow | undefined): TranscriptionState =>
    row
      ? {
          proceed: row.status === 'processing',
          status: row.status,
          callback: row.callback_url !== null && FINAL.includes(row.status),
        }
      : { proceed: false, status: 'failed', callback: false };

  async function startTranscription({ transcriptionId }: TranscriptionJobInput): Promise<TranscriptionState> {
    const row = await markProcessing(db, transcriptionId);
    // A route's transcription: its flow plans the route first (api-decisions 32).
    return { ...stateOf(row), ...(row && deps.catalog.getRoute(row.model) ? { route: true } : {}) };
  }

  /** The draw is made here, in a recorded step: a replay or a re-run reads it back instead of drawing again. */
  async function planTranscriptionRoute({ transcriptionId }: TranscriptionJobInput): Promise<RoutePlan> {
    const row = await loadTranscription(db, transcriptionId);
    return drawRoutePlan(deps.catalog, row?.model ?? '');
  }

  /** `passedContext`: the embedded engine's (heartbeat); under Temporal, Temporal's Context. */
  async function transcribeAudio(
    { transcriptionId, target }: TranscriptionJobInput & { target?: RouteTarget },
    passedContext?: ActivityContext,
  ): Promise<TranscriptionOutcome | RouteFailover> {
    const context = currentActivityContext(passedContext);
    const row = await loadTranscription(db, transcriptionId);
    if (!row || row.status !== 'processing')
      return {
        kind: 'failed',
        code: 'transcription.execution_failed',
        message: 'The transcription is no longer processing.',
      };
    // A route's transcription calls the target the flow chose; the outcome names it (billing).
    const model = deps.catalog.getModel(target?.model ?? row.model);
    if (!model)
      return {
        kind: 'failed',
        code: 'model.not_found',
        message: `Model ${target?.model ?? row.model} is no longer in the catalog.`,
      };
    const circuits = circuitsOf(deps.providers);
    const failovers = target
      ? targetFailovers({ metrics: deps.metrics, circuits }, { route: row.model, model, next: target.next })
      : undefined;
    const skipped = failovers?.skipped();
    if (skipped) return skipped;
    const format = row.file_format as AudioFormat;
    const heartbeat = setInterval(() => context.heartbeat(), deps.heartbeatIntervalMs ?? 2000);
    try {
      const result = await deps.providers.transcriptionModel(model.vendor).transcribe({
        // A target with another after it is not retried: the next vendor is the retry.
        ...(target?.next ? { maxRetries: 0 } : {}),
        model: model.upstreamId,
        audio: {
          format,
          mediaType: MEDIA_TYPES[format],
          filename: row.file_name,
          size: row.file_bytes,
          read: () => readChunks(db, transcriptionId),
        },
        language: row.options.language ?? undefined,
        prompt: row.options.prompt ?? undefined,
        beamSize: row.options.beam_size ?? undefined,
        signal: context.signal,
      });
      if (target) {
        circuits.success(model.vendor);
        countServed(deps.metrics, row.model, model.code);
      }
      return {
        kind: 'completed',
        result: transcriptionBody(result),
        seconds: billedSeconds(result.durationSeconds, heldSecondsOf(row)),
        ...(target ? { model: model.code } : {}),
      };
    } catch (error) {
      // Stopped by its engine (a shutdown, a Temporal cancellation): not the transcription's failure; it runs again.
      if (context.signal.aborted) throw abortError();
      const failover = failovers?.failed(error);
      if (failover) return failover;
      const failure = vendorFailureOf(error, 'transcription');
      if (!failure) throw error;
      return { kind: 'failed', ...failure };
    } finally {
      clearInterval(heartbeat);
    }
  }

  async function finalizeTranscription({
    transcriptionId,
    outcome,
  }: TranscriptionJobInput & { outcome: TranscriptionOutcome }): Promise<TranscriptionState> {
    let wrote = false;
    const row = await inTransaction(db, async (trx) => {
      const current = await loadTranscription(trx, transcriptionId);
      if (!current || FINAL.includes(current.status)) return current;
      // The billing hold placed at submission is settled by the debit, or released by a failure.
      if (outcome.kind === 'failed') {
        const failed = await markFinal(trx, transcriptionId, {
          status: 'failed',
          error: { code: outcome.code, message: outcome.message },
          cost: 0,
        });
        wrote = Boolean(failed);
        if (failed) await ledger.release(current.account_id, transcriptionOperationKey(transcriptionId), trx);
        return failed;
      }
      // A route's: at the price of the target that served, the route in the debit's metadata (api-decisions 32).
      const model = deps.catalog.getModel(outcome.model ?? current.model);
      const charge = model
        ? transcriptionCharge({
            accountId: current.account_id,
            model,
            seconds: outcome.seconds,
            requestId: transcriptionId,
            ...(outcome.model ? { route: current.model } : {}),
          })
        : undefined;
      const final = await markFinal(trx, transcriptionId, {
        status: 'completed',
        result: outcome.result,
        cost: charge?.cost ?? 0,
      });
      wrote = Boolean(final);
      if (final) {
        if (charge) await ledger.debit(charge.debit, trx);
        else await ledger.release(current.account_id, transcriptionOperationKey(transcriptionId), trx);
      }
      return final;
    });
    if (wrote && row) recordJobFinished(deps.metrics, 'transcription', row.status, deps.catalog.getModel(row.model));
    return stateOf(row);
  }

  async function sendTranscriptionCallback({ transcriptionId }: TranscriptionJobInput): Promise<void> {
    const row = await loadTranscription(db, transcriptionId);
    if (!row?.callback_url || !FINAL.includes(row.status)) return;
    await deps.webhooks.send({
      resourceId: row.id,
      accountId: row.account_id,
      url: row.callback_url,
      payload: transcriptionCallbackPayload(row),
    });
  }

  return {
    startTranscription,
    planTranscriptionRoute,
    transcribeAudio,
    finalizeTranscription,
    sendTranscriptionCallback,
  };
}
