import type { DebitInput } from '../billing/ledger';
import { priceCall } from '../billing/pricing';
import type { CatalogModel } from '../catalog/catalog-types';
import type { TranscriptionResult } from '../providers/provider';
import type { TranscriptionBody, TranscriptionRow } from './transcriptions.table';

/** The reply body (spec "Audio") of a model's result. */
export function transcriptionBody(result: TranscriptionResult): TranscriptionBody {
  return {
    text: result.text,
    language: result.language,
    duration: result.durationSeconds,
    segments: result.segments.map((segment) => ({
      text: segment.text,
      start: segment.start,
      end: segment.end,
      speaker_id: segment.speakerId,
    })),
    ...(result.notice ? { notice: result.notice } : {}),
  };
}

/**
 * Audio is billed by the started second (api-decisions 10: price unit `seconds`), and never beyond the seconds its
 * hold was placed for: whatever a vendor or decoder reports, the charge is at most what was held.
 */
export const billedSeconds = (durationSeconds: number, heldFor: number) =>
  Math.min(heldFor, Math.ceil(Math.max(0, durationSeconds)));

/**
 * The seconds a transcription's billing hold pays for (its duration is known only once transcribed): the longest
 * its file can play by its header and size (audio-header.ts, maxAudioSeconds).
 */
export const heldSeconds = (maxSeconds: number) => Math.ceil(maxSeconds);

/** Of a stored transcription; one stored before its header was read has its size only, bounded at 8 kbit/s. */
export const heldSecondsOf = (row: Pick<TranscriptionRow, 'options' | 'file_bytes'>) =>
  heldSeconds(row.options.max_seconds ?? row.file_bytes / 1000);

export const transcriptionOperationKey = (requestId: string) => `transcription:${requestId}`;

/** The cost of transcribing `seconds`, and its debit (`service: transcription`, keyed by the request id). */
export function transcriptionCharge(input: {
  accountId: string;
  model: CatalogModel;
  seconds: number;
  requestId: string;
  /** A request to a route (api-decisions 32): its code; `model` is then the target that served. */
  route?: string;
}): { cost: number; debit: DebitInput } {
  const { cost, exact } = priceCall(input.model.price, { input: input.seconds, output: 0 });
  return {
    cost,
    debit: {
      accountId: input.accountId,
      cost: exact,
      operationKey: transcriptionOperationKey(input.requestId),
      metadata: {
        source: 'api',
        vendor: input.model.vendor,
        model: input.model.code,
        ...(input.route ? { route: input.route } : {}),
        service: 'transcription',
        request_id: input.requestId,
        seconds: input.seconds,
      },
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, seconds: input.seconds },
    },
  };
}
