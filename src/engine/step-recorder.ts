import type { ActivityContext } from './activity-context';
import type { StepPolicy } from '../../workflows/flow-definition';

/** A recorded activity result of a job (a `job_steps` row). */
export interface RecordedStep {
  job_id: string;
  step: number;
  activity: string;
  result: unknown;
}

type ActivityFunction = (input: unknown, context: ActivityContext) => Promise<unknown>;

export interface StepRecorderOptions {
  jobId: string;
  attempt: number;
  activities: object;
  steps: { readonly [name: string]: StepPolicy };
  /** What earlier attempts recorded, by step number. */
  recorded: ReadonlyMap<number, { activity: string; result: unknown }>;
  /** The signal an activity started now gets (an inert one inside a non-cancellable scope). */
  signal(): AbortSignal;
  /** Stores one record (group-committed by the engine). */
  write(step: RecordedStep): Promise<void>;
  /** A result that took longer than this is recorded at once (see below). */
  recordAtOnceAfterMs: number;
  /** How long a quick result's record waits for the flow's next `rerun` step. */
  recordDelayMs: number;
}

/**
 * The activities as one run of a job's flow sees them in the embedded engine: a step recorded by an earlier
 * attempt returns its recorded result instead of running again, and a `record` step's result is stored for
 * the attempts after this one, the role Temporal's history plays.
 *
 * A `record` result that came back quickly is recorded only if the flow's next `rerun` step has not completed
 * within `recordDelayMs`; it usually has (a finalisation takes milliseconds), and then the record, a second
 * copy of the whole output, is never written. The price: a crash in that window repeats a quick vendor call
 * instead of replaying it. A longer call is recorded at once, and so is one followed by another recorded step
 * (the turns and tool calls of an MCP loop), before that step starts.
 */
export function createStepRecorder(options: StepRecorderOptions) {
  const activities = options.activities as Record<string, ActivityFunction>;
  let step = 0;
  const recording: Promise<void>[] = [];
  let deferred: { timer: NodeJS.Timeout; write: () => void }[] = [];
  const dropDeferred = () => {
    for (const record of deferred) clearTimeout(record.timer);
    deferred = [];
  };
  const writeDeferred = () => {
    for (const record of deferred) record.write();
    dropDeferred();
  };

  const proxy = new Proxy(
    {},
    {
      get: (_target, name: string) => async (input: unknown) => {
        const index = step++;
        if (options.steps[name] !== 'rerun' && deferred.length > 0) {
          // A recorded step follows a deferred record (an MCP loop: model turn, tool calls, next turn): no
          // `rerun` step is about to store that result, so it is written now, and committed before this step
          // acts on it (a crash from here on must replay, not repeat, what came before).
          writeDeferred();
          await Promise.all(recording);
        }
        // A re-run can take another path (a cancel recorded meanwhile skips a step), shifting the step
        // numbers: a recorded result counts only for the activity that produced it.
        const saved = options.recorded.get(index);
        if (saved?.activity === name) return saved.result;
        const startedAt = performance.now();
        const result = await activities[name](input, {
          signal: options.signal(),
          heartbeat: () => undefined,
          attempt: options.attempt,
        });
        // An activity missing from the kind's steps is recorded: the safe default.
        if (options.steps[name] === 'rerun') {
          dropDeferred();
          return result;
        }
        if (options.steps[name] === 'self-recorded') return result;
        // Recorded while the flow goes on: the record matters only if this process dies before the flow's
        // next (rerun) step has stored the result itself, and a crash before the record commits is no
        // different from a crash during the activity. The job completes only after its records.
        const write = () => {
          const written = options.write({ job_id: options.jobId, step: index, activity: name, result: result ?? null });
          // Observed at once (settle awaits it later): a record failing before then, as when the database closes
          // under a job still running at shutdown, must not be an unhandled rejection that ends the process.
          written.catch(() => undefined);
          recording.push(written);
        };
        if (performance.now() - startedAt >= options.recordAtOnceAfterMs) {
          write();
        } else {
          const record = {
            timer: setTimeout(() => {
              deferred = deferred.filter((other) => other !== record);
              write();
            }, options.recordDelayMs),
            write,
          };
          deferred.push(record);
        }
        return result;
      },
    },
  );

  return {
    activities: proxy,
    /**
     * After the flow: a failed flow runs again later, so what it deferred is written now, for that run to
     * replay; a completed one drops it. Every record is awaited, so none is left rejecting unobserved.
     */
    async settle(flowFailed: boolean): Promise<void> {
      if (flowFailed) writeDeferred();
      else dropDeferred();
      await Promise.all(recording);
    },
  };
}
