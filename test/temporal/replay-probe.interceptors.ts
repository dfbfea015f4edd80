/**
 * Test-only workflow interceptors, bundled into the replay tests' workflow bundle (never into the worker's).
 * Replay compares commands with the history but not the workflow's result (research/temporal-notes.md,
 * Caveat 2), so these report what the workflow actually computed through a sink that also runs during
 * replay: every scheduled activity (type and input, as the workflow built it), every timer it starts (Core
 * does not compare a timer's duration with the history's), and the returned value.
 * Runs inside the workflow sandbox: import nothing but @temporalio/workflow.
 */
import { proxySinks, workflowInfo, type Sinks, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

export interface ReplayProbeSinks extends Sinks {
  probe: {
    activity(workflowId: string, activityType: string, args: unknown[], options: unknown): void;
    timer(workflowId: string, seq: number, durationMs: number): void;
    result(workflowId: string, value: unknown): void;
  };
}

const { probe } = proxySinks<ReplayProbeSinks>();

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      async execute(input, next) {
        const value = await next(input);
        probe.result(workflowInfo().workflowId, value);
        return value;
      },
    },
  ],
  outbound: [
    {
      scheduleActivity(input, next) {
        probe.activity(workflowInfo().workflowId, input.activityType, input.args, input.options);
        return next(input);
      },
      startTimer(input, next) {
        probe.timer(workflowInfo().workflowId, input.seq, input.durationMs);
        return next(input);
      },
    },
  ],
});
