import { createResponseActivities, type ResponseActivityDeps } from './response.activities';
import { createRunActivities, type RunActivityDeps } from './run.activities';
import { createTranscriptionActivities, type TranscriptionActivityDeps } from './transcription.activities';

export type ActivityDeps = ResponseActivityDeps & RunActivityDeps & TranscriptionActivityDeps;

/** Every activity of every job kind, by durable name, with its dependencies injected (Temporal worker and embedded runner alike). */
export function createActivities(deps: ActivityDeps) {
  return { ...createResponseActivities(deps), ...createRunActivities(deps), ...createTranscriptionActivities(deps) };
}

export type Activities = ReturnType<typeof createActivities>;
export type { ResponseActivityDeps, RunActivityDeps, TranscriptionActivityDeps };
