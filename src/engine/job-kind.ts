import type { FlowContext } from '../../workflows/flow-context';

/** Every kind of durable job; each has its definition in the registry (job-kinds.ts). */
export type JobKind = 'response' | 'run' | 'transcription';

/**
 * How the embedded engine treats an activity's result on a re-run after a crash: `record`ed (not replay-safe,
 * like a vendor call: its result is stored and replayed, as Temporal's history would), `rerun` (it checks
 * the stored state first, so running it again is safe and its result need not be stored), or `self-recorded`
 * (it stores its own result, keyed by its input, and returns it when run again, like an MCP tool call: not
 * recorded by the engine, and, unlike `rerun`, no proof that the steps before it were stored).
 */
export type StepPolicy = 'record' | 'rerun' | 'self-recorded';

/**
 * One kind of durable job, declared once in its own slice and listed in the registry. Both engines read it:
 * the embedded engine runs `flow` over the activities with `steps`, `retry` and `abandon`; the Temporal
 * engine starts `workflowType` (the kind's wrapper in workflows/, which runs the same flow) with `input`.
 */
/** `Database`: the kysely handle `labels` reads with (a parameter, so this file imports nothing of the schema, which imports it). */
export interface JobKindDefinition<Input = unknown, Activities = any, Database = unknown> {
  /** The Temporal workflow type: a durable name (renaming it breaks running workflows). */
  readonly workflowType: string;
  /** The engine-neutral flow; it returns the resource's final status. */
  readonly flow: (context: FlowContext<Activities>, input: Input) => Promise<string>;
  /** The flow's input for the job of a resource (plain JSON: it enters Temporal history). */
  input(resourceId: string): Input;
  /** Every activity the flow calls, with its policy on a re-run (the type makes each one choose). */
  readonly steps: { readonly [Name in keyof Activities]: StepPolicy };
  /**
   * Embedded engine: attempts of a job before it is abandoned (failed ones, and ones that ended with their
   * process), and the delay before its first retry (doubling per attempt up to `maxDelayMs`).
   */
  readonly retry: { readonly maxAttempts: number; readonly initialDelayMs: number; readonly maxDelayMs: number };
  /**
   * The kind's failure ending (in its flow module): after the last attempt failed, end the resource cleanly (failed)
   * so that nothing waits on it forever. The Temporal wrapper ends a workflow whose activity ran out of retries
   * with the same function (workflows/temporal-context.ts, endingFailed).
   */
  abandon(activities: Activities, input: Input): Promise<string>;
  /**
   * The resource's table and the statuses it ends in: under Temporal, where the `jobs` row is only the launch
   * outbox, the engine ends the rows of jobs whose resource has ended (temporal-engine.ts, sweep).
   */
  readonly resource: {
    readonly table: 'responses' | 'runs' | 'transcriptions';
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
export const DEFAULT_JOB_RETRY: JobKindDefinition['retry'] = {
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
