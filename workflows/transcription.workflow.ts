import { proxyActivities } from '@temporalio/workflow';
import {
  endTranscriptionFailed,
  TRANSCRIPTION_ATTEMPTS,
  transcriptionFlow,
  type TranscriptionActivities,
  type TranscriptionJobInput,
} from './transcription.flow';
import { BOOKKEEPING_ACTIVITY, endingFailed, GENERATION_ACTIVITY, temporalFlowContext } from './temporal-context';

// As many attempts as the embedded engine gives the job (transcription.job.ts).
const generation = proxyActivities<Pick<TranscriptionActivities, 'transcribeAudio'>>({
  ...GENERATION_ACTIVITY,
  retry: { ...GENERATION_ACTIVITY.retry, maximumAttempts: TRANSCRIPTION_ATTEMPTS },
});
const bookkeeping = proxyActivities<Omit<TranscriptionActivities, 'transcribeAudio'>>(BOOKKEEPING_ACTIVITY);

/** Durable name: `transcriptionWorkflow`. Workflow id = `transcription/<request id>`. Query `status`. */
export async function transcriptionWorkflow(input: TranscriptionJobInput): Promise<string> {
  const context = temporalFlowContext<TranscriptionActivities>({
    startTranscription: bookkeeping.startTranscription,
    transcribeAudio: generation.transcribeAudio,
    finalizeTranscription: bookkeeping.finalizeTranscription,
    sendTranscriptionCallback: bookkeeping.sendTranscriptionCallback,
  });
  return endingFailed(
    () => transcriptionFlow(context, input),
    () => endTranscriptionFailed(context.activities, input),
  );
}
