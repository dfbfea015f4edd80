import { transcriptionJob } from '../audio/transcription.job';
import { responseJob } from '../responses/response.job';
import { runJob } from '../threads/run.job';
import type { Db } from '../db/database';
import type { JobKind, JobKindDefinition } from './job-kind';

/**
 * The registry of durable job kinds: the one list both engines read. Adding a kind adds its name to JobKind
 * (job-kind.ts), its definition here, and its flow, Temporal wrapper and activities in its own slice (README,
 * "Adding a job kind").
 */
export const jobKinds: { readonly [Kind in JobKind]: JobKindDefinition<any, any, Db> } = {
  response: responseJob,
  run: runJob,
  transcription: transcriptionJob,
};
