import type { FlowDefinition } from '../../workflows/flow-definition';

/**
 * The durable job kinds, by name. Each kind's slice declares its own name next to its definition, by augmenting this
 * interface (`declare module '../engine/job-kind' { interface JobKinds { run: RunJobInput } }`, the value being its
 * flow's input), and the registry (job-kinds.ts) must list a definition for every name: the type checker holds the
 * two together. So the list of kinds lives with the kinds, and this module imports none of them.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface JobKinds {}

/** Every kind of durable job. */
export type JobKind = keyof JobKinds & string;

/**
 * One kind of durable job, declared once in its own slice (`<kind>.job.ts`) and listed in the registry. Its flow
 * (workflows/<kind>.flow.ts) is what both engines run: the embedded engine over `activities` with its steps'
 * policies, Temporal as the workflow the bundle makes of it, on workers that register the same `activities`.
 * `Deps`: what its activities need (the runtime gives every kind the same object). `Database`: the kysely handle
 * `labels` reads with (a parameter, so this file imports nothing of the schema, which imports it).
 */
export interface JobKindDefinition<Input, Activities, Deps, Database> {
  readonly flow: FlowDefinition<Activities, Input>;
  /** Its activities, by durable name, with their dependencies injected (the Temporal worker and the embedded engine). */
  activities(deps: Deps): Activities;
  /**
   * Embedded engine: attempts of a job before it is abandoned (failed ones, and ones that ended with their
   * process), and the delay before its first retry (doubling per attempt up to `maxDelayMs`).
   */
  readonly retry: { readonly maxAttempts: number; readonly initialDelayMs: number; readonly maxDelayMs: number };
  /**
   * The resource's table and the statuses it ends in: under Temporal, where the `jobs` row is only the launch
   * outbox, the engine ends the rows of jobs whose resource has ended (temporal-engine.ts, sweep).
   */
  readonly resource: {
    readonly table: string;
    readonly finalStatuses: readonly string[];
  };
  /** Who and what the job is for (Temporal search attributes and memo); undefined when the resource is gone. */
  labels(db: Database, resourceId: string): Promise<JobLabels | undefined>;
}

/** What an operator filters jobs by (Temporal search attributes): the account, the model and its vendor, the status. */
export interface JobLabels {
  accountId: string;
  model: string;
  vendor: string;
  /** Responses: queued (true) or synchronous or streamed (false); Runs and transcriptions always run in the background. */
  background: boolean;
  /** The resource's status when its job is launched (then the workflow keeps SwitchyardStatus current). */
  status: string;
}

/** The retry policy of the kinds so far: five attempts, from half a second, doubling up to 30 seconds. */
export const DEFAULT_JOB_RETRY: JobKindDefinition<unknown, unknown, unknown, unknown>['retry'] = {
  maxAttempts: 5,
  initialDelayMs: 500,
  maxDelayMs: 30_000,
};

/** A job as engines see it: the resource id and its kind. */
export interface JobRef {
  id: string;
  kind: JobKind;
}

/**
 * Temporal workflow id of a job: the kind, then the resource id (`response/resp_…`). Resource ids are unique
 * within their kind; the kind keeps kinds apart in one Temporal namespace and names the job in Temporal's UI.
 */
export const workflowIdOf = (job: JobRef) => `${job.kind}/${job.id}`;
