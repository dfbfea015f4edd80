import { createResponseActivities, type ResponseActivityDeps } from './response.activities';

/** Every activity, by durable name, with its dependencies injected (Temporal worker and embedded runner alike). */
export function createActivities(deps: ResponseActivityDeps) {
  return { ...createResponseActivities(deps) };
}

export type Activities = ReturnType<typeof createActivities>;
export type { ResponseActivityDeps };
