import type { ColumnType, Selectable } from 'kysely';
import type { CreatedAt, Json } from '../db/columns';

/**
 * api-decisions 9: `queued → processing → completed | failed`. `uploading` is the row while its file is being
 * stored (never visible through the API); an upload abandoned by a crash is swept by age.
 */
export type TranscriptionStatus = 'uploading' | 'queued' | 'processing' | 'completed' | 'failed';

export interface TranscriptionOptions {
  language: string | null;
  prompt: string | null;
  beam_size: number | null;
  source: string | null;
  /** The longest the file can play by its header (seconds): what the hold was placed for, the most it is billed. */
  max_seconds?: number;
}

/** The reply of a transcription (spec "Audio"), without its `usage`, as stored and as recorded in job history. */
export interface TranscriptionBody {
  text: string;
  language: string | null;
  duration: number;
  segments: Array<{ text: string; start: number; end: number; speaker_id: string | null }>;
  /** Present when the model has something to say about the result (the dev models: that they recognise no words). */
  notice?: string;
}

export interface TranscriptionsTable {
  id: string;
  account_id: string;
  model: string;
  status: TranscriptionStatus;
  file_name: string;
  file_format: string;
  file_bytes: number;
  options: Json<TranscriptionOptions>;
  callback_url: string | null;
  meta: Json<Record<string, unknown> | null>;
  result: Json<TranscriptionBody | null>;
  cost: number | null;
  error: Json<{ code: string; message: string } | null>;
  created_at: CreatedAt;
  /** When the status last changed (the callback's `status_at`). */
  status_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** An upload, stored in order in chunks of up to 256 KiB; deleted when its job ends. */
export interface TranscriptionChunksTable {
  transcription_id: string;
  seq: number;
  data: Uint8Array;
}

export type TranscriptionRow = Selectable<TranscriptionsTable>;
