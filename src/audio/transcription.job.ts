import { sql } from 'kysely';
import type { Db } from '../db/database';
import { DEFAULT_JOB_RETRY, type JobKindDefinition } from '../engine/job-kind';
import {
  TRANSCRIPTION_ATTEMPTS,
  transcriptionFlowDefinition,
  type TranscriptionActivities,
  type TranscriptionJobInput,
} from '../../workflows/transcription.flow';
import { createTranscriptionActivities, type TranscriptionActivityDeps } from './transcription.activities';

declare module '../engine/job-kind' {
  interface JobKinds {
    transcription: TranscriptionJobInput;
  }
}

/** An asynchronous transcription's durable job: one workflow per request (workflows/transcription.flow.ts). */
export const transcriptionJob: JobKindDefinition<
  TranscriptionJobInput,
  TranscriptionActivities,
  TranscriptionActivityDeps,
  Db
> = {
  flow: transcriptionFlowDefinition,
  activities: createTranscriptionActivities,
  // A transcription's attempts end in a classified outcome (a refused file fails at once, billed nothing), so what
  // repeats is an attempt that ended with its process: twice is the same failure, not bad luck. Temporal gives the
  // vendor call as many attempts (its flow's generationAttempts).
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
};
