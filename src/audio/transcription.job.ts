import type { Db } from '../db/database';
import { sql } from 'kysely';
import { DEFAULT_JOB_RETRY, type JobKindDefinition } from '../engine/job-kind';
import { TRANSCRIPTION_ATTEMPTS } from '../../workflows/transcription.flow';
import {
  endTranscriptionFailed,
  transcriptionFlow,
  type TranscriptionActivities,
  type TranscriptionJobInput,
} from '../../workflows/transcription.flow';

/** An asynchronous transcription's durable job: one workflow per request (workflows/transcription.flow.ts). */
export const transcriptionJob: JobKindDefinition<TranscriptionJobInput, TranscriptionActivities, Db> = {
  workflowType: 'transcriptionWorkflow',
  flow: transcriptionFlow,
  input: (transcriptionId) => ({ transcriptionId }),
  steps: {
    // Guarded by the stored status.
    startTranscription: 'rerun',
    // The vendor call: its result is recorded, so a re-run after a crash never calls (and is never billed) twice.
    transcribeAudio: 'record',
    // Guarded by the status it leaves; the debit by its operation key.
    finalizeTranscription: 'rerun',
    // At most once through its delivery row.
    sendTranscriptionCallback: 'rerun',
  },
  // A transcription's attempts end in a classified outcome (a refused file fails at once, billed nothing), so what
  // repeats is an attempt that ended with its process: twice is the same failure, not bad luck. Temporal gives the
  // vendor call as many attempts (transcription.workflow.ts).
  retry: { ...DEFAULT_JOB_RETRY, maxAttempts: TRANSCRIPTION_ATTEMPTS },
  resource: { table: 'transcriptions', finalStatuses: ['completed', 'failed'] },
  labels: (db, transcriptionId) =>
    db
      .selectFrom('transcriptions')
      .leftJoin('catalog_models', 'catalog_models.code', 'transcriptions.model')
      .select([
        'transcriptions.account_id as accountId',
        'transcriptions.model',
        sql<string>`coalesce(catalog_models.vendor_code, 'unknown')`.as('vendor'),
        sql<boolean>`true`.as('background'),
        'transcriptions.status',
      ])
      .where('transcriptions.id', '=', transcriptionId)
      .executeTakeFirst(),
  abandon: endTranscriptionFailed,
};
