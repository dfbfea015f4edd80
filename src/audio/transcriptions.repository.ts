import { sql, type Insertable } from 'kysely';
import type { Db } from '../db/database';
import type { JobAdmission } from '../engine/engine';
import type { TranscriptionBody, TranscriptionRow, TranscriptionsTable } from './transcriptions.table';

/** The asynchronous transcriptions' queries. Status changes are guarded by the status they leave. */

/** Chunks read per query when an upload is streamed back (one: pg returns bytea as hex text, twice its size). */
const CHUNKS_PER_READ = 1;
/** An upload still `uploading` after this long was abandoned (its process died mid-upload). */
const ABANDONED_UPLOAD = sql`interval '1 hour'`;

export async function insertUploading(executor: Db, values: Insertable<TranscriptionsTable>): Promise<void> {
  await executor.insertInto('transcriptions').values(values).execute();
}

export async function appendChunk(executor: Db, transcriptionId: string, seq: number, data: Uint8Array): Promise<void> {
  await executor.insertInto('transcription_chunks').values({ transcription_id: transcriptionId, seq, data }).execute();
}

/** uploading → queued, with its job row (its admission's outbox row), in one statement. */
export async function markQueued(
  executor: Db,
  id: string,
  admission: JobAdmission,
): Promise<TranscriptionRow | undefined> {
  return executor
    .with('queued', (qb) =>
      qb
        .updateTable('transcriptions')
        .set({ status: 'queued', status_at: sql`now()` })
        .where('id', '=', id)
        .where('status', '=', 'uploading')
        .returningAll(),
    )
    .with('outbox', admission.outbox('queued'))
    .selectFrom('queued')
    .selectAll()
    .executeTakeFirst();
}

/** Removes a transcription and its chunks (an upload that could not be completed). */
export async function deleteTranscription(executor: Db, id: string): Promise<void> {
  await executor.deleteFrom('transcriptions').where('id', '=', id).execute();
}

/** Deletes uploads their process abandoned (at most `limit` per call); returns how many. */
export async function sweepAbandonedUploads(executor: Db, limit = 100): Promise<number> {
  const rows = await executor
    .deleteFrom('transcriptions')
    .where('id', 'in', (qb) =>
      qb
        .selectFrom('transcriptions')
        .select('id')
        .where('status', '=', 'uploading')
        .where('created_at', '<', sql<Date>`now() - ${ABANDONED_UPLOAD}`)
        .limit(limit),
    )
    .returning('id')
    .execute();
  return rows.length;
}

export async function findTranscription(
  executor: Db,
  accountId: string,
  id: string,
): Promise<TranscriptionRow | undefined> {
  return executor
    .selectFrom('transcriptions')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('status', '!=', 'uploading')
    .executeTakeFirst();
}

export async function loadTranscription(executor: Db, id: string): Promise<TranscriptionRow | undefined> {
  return executor.selectFrom('transcriptions').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The stored upload, in order, a few chunks per query. */
export async function* readChunks(executor: Db, id: string): AsyncGenerator<Uint8Array> {
  for (let from = 0; ; from += CHUNKS_PER_READ) {
    const rows = await executor
      .selectFrom('transcription_chunks')
      .select(['seq', 'data'])
      .where('transcription_id', '=', id)
      .where('seq', '>=', from)
      .where('seq', '<', from + CHUNKS_PER_READ)
      .orderBy('seq')
      .execute();
    for (const row of rows) yield row.data;
    if (rows.length < CHUNKS_PER_READ) return;
  }
}

/** queued → processing; the row as it is after (a re-run finds it processing already, or final). */
export async function markProcessing(executor: Db, id: string): Promise<TranscriptionRow | undefined> {
  const moved = await executor
    .updateTable('transcriptions')
    .set({ status: 'processing', status_at: sql`now()` })
    .where('id', '=', id)
    .where('status', '=', 'queued')
    .returningAll()
    .executeTakeFirst();
  return moved ?? loadTranscription(executor, id);
}

export type TranscriptionEnding =
  | { status: 'completed'; result: TranscriptionBody; cost: number }
  | { status: 'failed'; error: { code: string; message: string }; cost: number };

/**
 * processing (or queued, when abandoned) → completed | failed, and the upload deleted: undefined when the row
 * was final already (a re-run), which then changes nothing.
 */
export async function markFinal(
  executor: Db,
  id: string,
  ending: TranscriptionEnding,
): Promise<TranscriptionRow | undefined> {
  const row = await executor
    .updateTable('transcriptions')
    .set({
      status: ending.status,
      status_at: sql`now()`,
      cost: ending.cost,
      result: JSON.stringify(ending.status === 'completed' ? ending.result : null),
      error: JSON.stringify(ending.status === 'failed' ? ending.error : null),
    })
    .where('id', '=', id)
    .where('status', 'in', ['queued', 'processing'])
    .returningAll()
    .executeTakeFirst();
  if (row) await executor.deleteFrom('transcription_chunks').where('transcription_id', '=', id).execute();
  return row;
}
