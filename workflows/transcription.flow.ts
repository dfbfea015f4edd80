import type { FlowContext } from './flow-context';
import type { FlowDefinition } from './flow-definition';
import { routeCalls, type RouteFailover, type RoutePlan, type RouteTarget } from './route-steps';
import type { TranscriptionBody } from '../src/audio/transcriptions.table';

/**
 * Attempts of a transcription's vendor call, on either engine: an attempt that ended without an outcome (its process
 * or worker died mid-call) is tried once more; a second one ends the transcription failed, billed nothing.
 */
export const TRANSCRIPTION_ATTEMPTS = 2;

/** Shapes exchanged between the transcription flow and its activities (plain JSON: they enter Temporal history). */
export interface TranscriptionJobInput {
  transcriptionId: string;
}

export type TranscriptionOutcome =
  | {
      kind: 'completed';
      result: TranscriptionBody;
      seconds: number;
      /** A transcription on a route: the target that served it (its price and name are billed; api-decisions 32). */
      model?: string;
    }
  | { kind: 'failed'; code: string; message: string };

/**
 * The change that let an asynchronous transcription name a route (api-decisions 32): its plan and each failover are
 * steps of its job, as a Response's are. Before it no transcription job had a route.
 */
export const TRANSCRIPTION_ROUTE_STEPS = 'transcription-route-steps';

/** Where a transcription stands: whether it still has to be transcribed, its status, and whether it has a callback. */
export interface TranscriptionState {
  proceed: boolean;
  status: string;
  callback: boolean;
  /** It names a route: the flow plans it first. */
  route?: boolean;
}

/** Activity names are durable (they are recorded in histories): rename only with a versioning plan. */
export interface TranscriptionActivities {
  /** queued → processing. A re-run finds it processing (proceed) or final (not). */
  startTranscription(input: TranscriptionJobInput): Promise<TranscriptionState>;
  /** A route's targets in order, from a random draw: recorded, so a replay or a re-run never draws again. */
  planTranscriptionRoute(input: TranscriptionJobInput): Promise<RoutePlan>;
  /**
   * The vendor call over the stored upload (a route's: to `target`, a failover outcome when it fails before answering
   * and another target follows). Not repeatable (it bills upstream): recorded.
   */
  transcribeAudio(
    input: TranscriptionJobInput & { target?: RouteTarget },
  ): Promise<TranscriptionOutcome | RouteFailover>;
  /** Stores the result (or the failure), bills the audio's seconds, deletes the upload. Idempotent. */
  finalizeTranscription(input: TranscriptionJobInput & { outcome: TranscriptionOutcome }): Promise<TranscriptionState>;
  /** The one-shot callback `{request_id, status, status_at}` (at most once, outcome recorded). */
  sendTranscriptionCallback(input: TranscriptionJobInput): Promise<void>;
}

/**
 * One asynchronous transcription (docs/architecture.md, "The map"): processing, the vendor call over the stored
 * upload, the final record with its debit, then the callback. A re-run after a crash replays the recorded
 * vendor call; a job found final only completes its callback.
 */
export async function transcriptionFlow(
  ctx: FlowContext<TranscriptionActivities>,
  input: TranscriptionJobInput,
): Promise<string> {
  const { activities } = ctx;
  let state = await ctx.nonCancellable(() => activities.startTranscription(input));
  if (state.proceed) {
    ctx.setStatus('processing');
    let outcome: TranscriptionOutcome;
    try {
      outcome =
        state.route && ctx.patched(TRANSCRIPTION_ROUTE_STEPS)
          ? await routeCalls(
              ctx,
              () => activities.planTranscriptionRoute(input),
              (_: undefined, target) => activities.transcribeAudio({ ...input, target }),
            ).call(undefined)
          : ((await ctx.nonCancellable(() => activities.transcribeAudio(input))) as TranscriptionOutcome);
    } catch {
      // Infrastructure failure that outlived the activity's retries: end it cleanly, billed nothing.
      outcome = {
        kind: 'failed',
        code: 'transcription.execution_failed',
        message: 'The transcription could not be completed; submit the file again.',
      };
    }
    state = await ctx.nonCancellable(() => activities.finalizeTranscription({ ...input, outcome }));
  }
  if (state.callback) await ctx.nonCancellable(() => activities.sendTranscriptionCallback(input));
  ctx.setStatus(state.status);
  return state.status;
}

/** The failure ending of a transcription whose job cannot go on (as endResponseFailed): failed, its callback sent. */
export async function endTranscriptionFailed(
  activities: TranscriptionActivities,
  input: TranscriptionJobInput,
): Promise<string> {
  const outcome = {
    kind: 'failed',
    code: 'transcription.execution_failed',
    message: 'The transcription could not be processed; submit the file again.',
  } as const;
  const state = await activities.finalizeTranscription({ transcriptionId: input.transcriptionId, outcome });
  if (state.callback) await activities.sendTranscriptionCallback({ transcriptionId: input.transcriptionId });
  return state.status;
}

/** An asynchronous transcription's durable flow: one workflow per request, `transcription/<request id>`. */
export const transcriptionFlowDefinition: FlowDefinition<TranscriptionActivities, TranscriptionJobInput> = {
  workflowType: 'transcriptionWorkflow',
  input: (transcriptionId) => ({ transcriptionId }),
  run: transcriptionFlow,
  abandon: endTranscriptionFailed,
  steps: {
    // Guarded by the stored status.
    startTranscription: { onRerun: 'rerun', lane: 'start' },
    // A route's draw: a re-run replays it, never draws again (api-decisions 32).
    planTranscriptionRoute: { onRerun: 'record', lane: 'bookkeeping' },
    // The vendor call: its result is recorded, so a re-run after a crash never calls (and is never billed) twice. A
    // route's failover outcome too: a re-run goes on from the next target.
    transcribeAudio: { onRerun: 'record', lane: 'generation' },
    // Guarded by the status it leaves; the debit by its operation key.
    finalizeTranscription: { onRerun: 'rerun', lane: 'bookkeeping' },
    // At most once through its delivery row.
    sendTranscriptionCallback: { onRerun: 'rerun', lane: 'bookkeeping' },
  },
  // A transcription has no cancel.
  abandonableStart: false,
  generationAttempts: TRANSCRIPTION_ATTEMPTS,
};
