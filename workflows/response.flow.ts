import type { FlowContext } from './flow-context';

/** Shapes exchanged between the response flow and its activities (plain JSON: they enter Temporal history). */
export interface ResponseJobInput {
  responseId: string;
}

export type GenerationOutcome =
  | {
      kind: 'generated';
      status: 'completed' | 'incomplete';
      /** Output items in wire form. */
      output: unknown[];
      inputTokens: number;
      outputTokens: number;
      incompleteReason?: string;
      /** The sequence number after the last event of the generation (stored or in `unwrittenEvents`). */
      nextSequence: number;
      /**
       * The generation's last events (the closing `done` events), not yet stored: finalizeResponse stores them
       * with the final event, in its one statement. Small by construction (bounded by callProvider).
       */
      unwrittenEvents?: unknown[];
    }
  | {
      kind: 'failed';
      code: string;
      message: string;
      inputTokens: number;
      outputTokens: number;
      nextSequence?: number;
      /** Events live readers may have seen that could not be stored then; finalizeResponse stores them. */
      unwrittenEvents?: unknown[];
    }
  | { kind: 'cancelled' };

export interface FinalizeResult {
  status: string;
  webhook: boolean;
}

/** Activity names are durable (they are recorded in histories): rename only with a versioning plan. */
export interface ResponseActivities {
  /** queued → in_progress; false when the Response was cancelled (or finished) before it started. */
  startResponse(input: ResponseJobInput): Promise<{ proceed: boolean }>;
  /** Calls the vendor, streaming events to the event log; vendor failures come back as an outcome. */
  callProvider(input: ResponseJobInput): Promise<GenerationOutcome>;
  /** All at once (one statement; with a conversation append, one transaction): final status, output, usage, debit, final event. Idempotent. */
  finalizeResponse(input: ResponseJobInput & { outcome: GenerationOutcome }): Promise<FinalizeResult>;
  /** One-shot webhook to metadata.webhook_url (at most once, outcome recorded). */
  sendWebhook(input: ResponseJobInput): Promise<void>;
}

/** One durable run of a Response: start, generate (cancellable), finalise (not cancellable), notify. */
export async function responseFlow(ctx: FlowContext<ResponseActivities>, input: ResponseJobInput): Promise<string> {
  const { activities } = ctx;
  let outcome: GenerationOutcome = { kind: 'cancelled' };
  const start = ctx.cancelRequested() ? { proceed: false } : await ctx.nonCancellable(() => activities.startResponse(input));
  if (start.proceed && !ctx.cancelRequested()) {
    ctx.setStatus('in_progress');
    try {
      outcome = await ctx.cancellable(() => activities.callProvider(input));
    } catch (err) {
      if (ctx.isCancellation(err)) {
        outcome = { kind: 'cancelled' };
      } else {
        // Infrastructure failure that outlived the activity's retries: end the Response cleanly.
        outcome = {
          kind: 'failed',
          code: 'response.execution_failed',
          message: 'The generation could not be completed; retry the request.',
          inputTokens: 0,
          outputTokens: 0,
        };
      }
    }
  }
  const final = await ctx.nonCancellable(() => activities.finalizeResponse({ ...input, outcome }));
  ctx.setStatus(final.status);
  if (final.webhook) await ctx.nonCancellable(() => activities.sendWebhook(input));
  return final.status;
}
