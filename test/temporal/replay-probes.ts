import type { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Runtime, Worker, type InjectedSinks, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { JsonHistory } from './history-builder';
import { bundleWorkflows, quietLogger } from './workflow-bundle';
import type { ReplayProbeSinks } from './replay-probe.interceptors';

/** An activity the replayed workflow scheduled: its type, input and options (replay compares none of them). */
export interface ScheduledActivity {
  type: string;
  args: unknown[];
  options: Record<string, any>;
}

/** What one replayed workflow computed, reported by the probe interceptors (replay-probe.interceptors.ts). */
export interface Probe {
  activities: ScheduledActivity[];
  timers: Array<{ seq: number; durationMs: number }>;
  results: unknown[];
}

/**
 * The sinks the probe interceptors report to, and each workflow id's probe: the replay tests of every job kind
 * (replay.test.ts, run-replay.test.ts, transcription-replay.test.ts) replay each history under its own id.
 */
export function createReplayProbes(): { sinks: InjectedSinks<ReplayProbeSinks>; probeFor(workflowId: string): Probe } {
  const probes = new Map<string, Probe>();
  const probeFor = (workflowId: string) => {
    let probe = probes.get(workflowId);
    if (!probe) probes.set(workflowId, (probe = { activities: [], timers: [], results: [] }));
    return probe;
  };
  const sinks: InjectedSinks<ReplayProbeSinks> = {
    probe: {
      activity: {
        fn: (_info, workflowId, type, args, options) =>
          void probeFor(workflowId).activities.push({ type, args, options: options as Record<string, any> }),
        callDuringReplay: true,
      },
      timer: {
        fn: (_info, workflowId, seq, durationMs) => void probeFor(workflowId).timers.push({ seq, durationMs }),
        callDuringReplay: true,
      },
      result: {
        fn: (_info, workflowId, value) => void probeFor(workflowId).results.push(value),
        callDuringReplay: true,
      },
    },
  };
  return { sinks, probeFor };
}

/**
 * The set-up every replay test file shares: Core's logging quietened (the rejected histories make it warn
 * "Failing workflow task"; the assertions cover them), the workflow bundle with the probe interceptors built
 * once for the file, and `replay`, which replays a history under a fresh workflow id (`<idPrefix><n>`, or the
 * id given) and returns what the workflow did. Call it at the top level of a test file.
 */
export function useReplay(idPrefix: string, replayName: string) {
  Runtime.install({
    logger: quietLogger,
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } },
  });
  const { sinks, probeFor } = createReplayProbes();
  let bundle: WorkflowBundleWithSourceMap;
  let count = 0;
  beforeAll(async () => {
    bundle = await bundleWorkflows({ probe: true });
  });
  return {
    async replay(
      history: JsonHistory | ReturnType<typeof historyFromJSON>,
      workflowId = `${idPrefix}${++count}`,
    ): Promise<Probe> {
      await Worker.runReplayHistory({ workflowBundle: bundle, replayName, sinks }, history, workflowId);
      return probeFor(workflowId);
    },
  };
}
