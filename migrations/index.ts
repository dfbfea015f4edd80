import type { Migration } from 'kysely';
import * as initial from './20261122000000_initial';
import * as streamEvents from './20261124000000_stream_events';

/** Every migration, by timestamped name. A static list works the same from src (tests) and dist (build). */
export const migrations: Record<string, Migration> = {
  '20261122000000_initial': initial,
  '20261124000000_stream_events': streamEvents,
};
