import { createResponseActivities, type ResponseActivityDeps } from './response.activities';
import { createRunActivities, type RunActivityDeps } from './run.activities';

export type ActivityDeps = ResponseActivityDeps & RunActivityDeps;

/** Every activity of every job kind, by durable name, with its dependencies injected (Temporal worker and embedded runner alike). */
export function createActivities(deps: ActivityDeps) {
  return { ...createResponseActivities(deps), ...createRunActivities(deps) };
}

export type Activities = ReturnType<typeof createActivities>;
export type { ResponseActivityDeps, RunActivityDeps };
