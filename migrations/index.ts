import type { Migration } from 'kysely';
import * as initial from './20261122000000_initial';

/** Every migration, by timestamped name. A static list works the same from src (tests) and dist (build). */
export const migrations: Record<string, Migration> = {
  '20261122000000_initial': initial,
};
