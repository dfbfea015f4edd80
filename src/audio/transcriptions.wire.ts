import type { TranscriptionRow } from './transcriptions.table';

/** What the API shows of asynchronous transcriptions. */

/** GET .../check/{id}: `{request_id, status}`. */
export const transcriptionStatusToWire = (row: TranscriptionRow) => ({ request_id: row.id, status: row.status });

/** The callback's body (api-decisions 9): `status_at` in Unix seconds like every timestamp of the API. */
export const transcriptionCallbackPayload = (row: TranscriptionRow) => ({
  request_id: row.id,
  status: row.status,
  status_at: Math.floor(row.status_at.getTime() / 1000),
});
