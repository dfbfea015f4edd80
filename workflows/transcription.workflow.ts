import { proxyActivities } from '@temporalio/workflow';
import {
  endTranscriptionFailed,
  TRANSCRIPTION_ATTEMPTS,
  transcriptionFlow,
  type TranscriptionActivities,
  type TranscriptionJobInput,
} from './transcription.flow';
import { bookkeepingOptions, endingFailed, GENERATION_ACTIVITY, temporalFlowContext } from './temporal-context';

// As many attempts as the embedded engine gives the job (transcription.job.ts).
const generation = proxyActivities<Pick<TranscriptionActivities, 'transcribeAudio'>>({
  ...GENERATION_ACTIVITY,
  retry: { ...GENERATION_ACTIVITY.retry, maximumAttempts: TRANSCRIPTION_ATTEMPTS },
});

type Bookkeeping = Omit<TranscriptionActivities, 'transcribeAudio'>;

/** Durable name: `transcriptionWorkflow`. Workflow id = `transcription/<request id>`. Query `status`. */
export async function transcriptionWorkflow(input: TranscriptionJobInput): Promise<string> {
  // Its finalisation and callback on the bookkeeping queue (not held up by a full worker); its start on the
  // workflow's queue, where waiting for a slot is what `queued` means (a transcription has no cancel to abandon it).
  const options = bookkeepingOptions();
  const bookkeeping = proxyActivities<Bookkeeping>(options.bookkeeping);
  const start = proxyActivities<Pick<Bookkeeping, 'startTranscription'>>(options.start);
  const context = temporalFlowContext<TranscriptionActivities>({
    startTranscription: start.startTranscription,
    transcribeAudio: generation.transcribeAudio,
    finalizeTranscription: bookkeeping.finalizeTranscription,
    sendTranscriptionCallback: bookkeeping.sendTranscriptionCallback,
  });
  return endingFailed(
    () => transcriptionFlow(context, input),
    () => endTranscriptionFailed(context.activities, input),
  );
}
