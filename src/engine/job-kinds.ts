import { transcriptionJob } from '../audio/transcription.job';
import { responseJob } from '../responses/response.job';
import { runJob } from '../threads/run.job';
import type { Db } from '../db/database';
import type { StepPolicy } from '../../workflows/flow-definition';
import type { JobKind, JobKindDefinition } from './job-kind';

/**
 * The registry of durable job kinds: the one list both engines (and the workers' activities) read. Adding a kind
 * adds its flow (workflows/<kind>.flow.ts), its slice's definition (`<kind>.job.ts`, with its activities) and its
 * line here (docs/architecture.md, "Adding a job kind").
 */
export const jobKinds = {
  response: responseJob,
  run: runJob,
  transcription: transcriptionJob,
} satisfies { readonly [Kind in JobKind]: JobKindDefinition<any, any, any, Db> };

/** Every kind's name. */
export const JOB_KINDS = Object.keys(jobKinds) as JobKind[];

/** A kind's definition, as the engines handle any kind. */
export const jobKindOf = (kind: JobKind): JobKindDefinition<any, any, any, Db> => jobKinds[kind];

const policies = Object.fromEntries(
  JOB_KINDS.map((kind) => [
    kind,
    Object.fromEntries(Object.entries(jobKindOf(kind).flow.steps).map(([name, step]) => [name, step.onRerun])),
  ]),
) as { readonly [Kind in JobKind]: { readonly [name: string]: StepPolicy } };

/** The embedded engine's re-run policy of each activity of a kind (its flow's steps), computed once per kind. */
export const stepPolicies = (kind: JobKind) => policies[kind];

type Intersection<Union> = (Union extends unknown ? (value: Union) => void : never) extends (value: infer All) => void
  ? All
  : never;

/** What the activities of every kind need together (the runtime builds one object of them). */
export type ActivityDeps = Intersection<Parameters<(typeof jobKinds)[JobKind]['activities']>[0]>;

/** Every activity of every kind, by durable name (the Temporal worker and the embedded engine alike). */
export function createActivities(deps: ActivityDeps) {
  return Object.assign({}, ...JOB_KINDS.map((kind) => jobKindOf(kind).activities(deps))) as Activities;
}

/** Every activity of every kind, typed. */
export type Activities = Intersection<ReturnType<(typeof jobKinds)[JobKind]['activities']>>;
