/**
 * Builds Temporal workflow histories in proto3-JSON form (string event ids, base64 payloads), the format
 * `temporal workflow show -o json` writes and `Worker.runReplayHistory` reads through `historyFromJSON`.
 *
 * Every workflow task completion carries `sdkMetadata.coreUsedFlags [1,2,3]` and `langUsedFlags [1,2]`:
 * without core flag 1 (IdAndTypeDeterminismChecks) replay does not compare activity ids and types, and a
 * renamed or reordered activity would replay "successfully" (research/temporal-notes.md, Caveat 1).
 */
type Attributes = Record<string, unknown>;

export interface HistoryEvent {
  eventId: string;
  eventTime: string;
  eventType: string;
  [attributes: string]: unknown;
}

export interface JsonHistory {
  events: HistoryEvent[];
}

export interface FailureShape {
  message: string;
  type?: string;
  nonRetryable?: boolean;
}

const TASK_QUEUE = { name: 'switchyard', kind: 'TASK_QUEUE_KIND_NORMAL' };

/** Events are this far apart unless `advance` moves the clock (a timer that waited, a slow activity). */
export const EVENT_SPACING_MS = 1000;
/** The time of a history's first event. */
export const HISTORY_START_MS = Date.UTC(2026, 0, 1);

/** A proto3-JSON Duration ("600s", "1.5s"). */
const duration = (ms: number) => `${ms / 1000}s`;

const base64 = (text: string) => Buffer.from(text).toString('base64');

export function jsonPayload(value: unknown) {
  return { metadata: { encoding: base64('json/plain') }, data: base64(JSON.stringify(value)) };
}

/** Search attributes as the SDK encodes typed Keyword values: JSON, with the type in the payload's metadata. */
function keywordAttributes(fields: Record<string, string>) {
  const indexedFields = Object.fromEntries(
    Object.entries(fields).map(([name, value]) => [
      name,
      { metadata: { encoding: base64('json/plain'), type: base64('Keyword') }, data: base64(JSON.stringify(value)) },
    ]),
  );
  return { indexedFields };
}

/** What the SDK writes for an activity or workflow returning `undefined`. */
export function nullPayload() {
  return { metadata: { encoding: base64('binary/null') } };
}

export function decodePayload(payload: { metadata?: Record<string, string>; data?: string }): unknown {
  const encoding = Buffer.from(payload.metadata?.encoding ?? '', 'base64').toString();
  if (encoding === 'binary/null') return undefined;
  if (encoding !== 'json/plain') throw new Error(`unexpected payload encoding ${encoding}`);
  return JSON.parse(Buffer.from(payload.data ?? '', 'base64').toString());
}

export class HistoryBuilder {
  private readonly events: HistoryEvent[] = [];
  private lastWorkflowTaskCompleted = '0';
  /** Activity id → [scheduledEventId, startedEventId], for cancel and failure events that refer back. */
  private readonly activities = new Map<string, { scheduled: string; started?: string }>();
  private nextActivityId = 1;
  /** Timer id (the workflow's timer sequence number) → its TimerStarted event and duration. */
  private readonly timers = new Map<string, { started: string; durationMs: number; startedAt: number }>();
  private nextTimerId = 1;
  /** The time the next event carries. */
  private clock = HISTORY_START_MS;

  private add(eventType: string, attributesKey: string, attributes: Attributes): string {
    const eventId = String(this.events.length + 1);
    this.events.push({
      eventId,
      eventTime: new Date(this.clock).toISOString(),
      eventType,
      [attributesKey]: attributes,
    });
    this.clock += EVENT_SPACING_MS;
    return eventId;
  }

  /**
   * The time (epoch ms) the event `ahead` places after the next one will carry (0: the next event), if the clock
   * is not advanced meanwhile. Workflow time (`Date.now()` in a workflow) is the time of the WorkflowTaskStarted
   * event of the task that runs the code: e.g. right after an ActivityTaskCompleted, the next workflow task
   * starts at `eventTimeAhead(1)` (WorkflowTaskScheduled is event 0).
   */
  eventTimeAhead(ahead = 0): number {
    return this.clock + ahead * EVENT_SPACING_MS;
  }

  /** Moves the clock forward: the next event carries a time `ms` later than it would have. */
  advance(ms: number): this {
    this.clock += ms;
    return this;
  }

  /** `searchAttributes`: Keyword attributes the workflow starts with (as the Temporal engine sets them). */
  started(
    workflowType: string,
    args: unknown[],
    workflowId = 'resp_replay',
    options: { searchAttributes?: Record<string, string> } = {},
  ): this {
    this.add('EVENT_TYPE_WORKFLOW_EXECUTION_STARTED', 'workflowExecutionStartedEventAttributes', {
      ...(options.searchAttributes ? { searchAttributes: keywordAttributes(options.searchAttributes) } : {}),
      workflowType: { name: workflowType },
      taskQueue: TASK_QUEUE,
      input: { payloads: args.map(jsonPayload) },
      workflowExecutionTimeout: '0s',
      workflowRunTimeout: '0s',
      workflowTaskTimeout: '10s',
      attempt: 1,
      originalExecutionRunId: `run-${workflowId}`,
      firstExecutionRunId: `run-${workflowId}`,
      identity: 'history-builder',
      header: {},
    });
    return this;
  }

  /** One workflow task: scheduled, started, completed (the commands it produced follow). */
  workflowTask(): this {
    const scheduled = this.add('EVENT_TYPE_WORKFLOW_TASK_SCHEDULED', 'workflowTaskScheduledEventAttributes', {
      taskQueue: TASK_QUEUE,
      startToCloseTimeout: '10s',
      attempt: 1,
    });
    const started = this.add('EVENT_TYPE_WORKFLOW_TASK_STARTED', 'workflowTaskStartedEventAttributes', {
      scheduledEventId: scheduled,
      identity: 'history-builder',
    });
    this.lastWorkflowTaskCompleted = this.add(
      'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
      'workflowTaskCompletedEventAttributes',
      {
        scheduledEventId: scheduled,
        startedEventId: started,
        identity: 'history-builder',
        sdkMetadata: {
          coreUsedFlags: [1, 2, 3],
          langUsedFlags: [1, 2],
          sdkName: 'temporal-typescript',
          sdkVersion: '1.24.0',
        },
      },
    );
    return this;
  }

  /** UpsertWorkflowSearchAttributes, as the previous workflow task commanded (Keyword values). */
  upsertSearchAttributes(fields: Record<string, string>): this {
    this.add('EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', 'upsertWorkflowSearchAttributesEventAttributes', {
      workflowTaskCompletedEventId: this.lastWorkflowTaskCompleted,
      searchAttributes: keywordAttributes(fields),
    });
    return this;
  }

  /**
   * The marker of `patched(patchId)` in a workflow that took the patched path, and the search attribute the SDK upserts
   * with it, as the previous workflow task commanded.
   */
  patch(patchId: string): this {
    this.add('EVENT_TYPE_MARKER_RECORDED', 'markerRecordedEventAttributes', {
      markerName: 'core_patch',
      details: { 'patch-data': { payloads: [jsonPayload({ id: patchId, deprecated: false })] } },
      workflowTaskCompletedEventId: this.lastWorkflowTaskCompleted,
    });
    // The SDK lists the workflow's patches in TemporalChangeVersion (a KeywordList) when it first takes one.
    const versions = {
      metadata: { encoding: base64('json/plain'), type: base64('KeywordList') },
      data: base64(JSON.stringify([patchId])),
    };
    this.add('EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', 'upsertWorkflowSearchAttributesEventAttributes', {
      workflowTaskCompletedEventId: this.lastWorkflowTaskCompleted,
      searchAttributes: { indexedFields: { TemporalChangeVersion: versions } },
    });
    return this;
  }

  /** ActivityTaskScheduled (+ Started unless `started: false`), as the previous workflow task commanded. */
  scheduleActivity(activityType: string, options: { id?: string; started?: boolean } = {}): string {
    const id = options.id ?? String(this.nextActivityId++);
    const scheduled = this.add('EVENT_TYPE_ACTIVITY_TASK_SCHEDULED', 'activityTaskScheduledEventAttributes', {
      activityId: id,
      activityType: { name: activityType },
      taskQueue: TASK_QUEUE,
      header: {},
      input: { payloads: [] },
      workflowTaskCompletedEventId: this.lastWorkflowTaskCompleted,
      scheduleToCloseTimeout: '0s',
      scheduleToStartTimeout: '0s',
      startToCloseTimeout: '60s',
      heartbeatTimeout: '0s',
    });
    const entry: { scheduled: string; started?: string } = { scheduled };
    this.activities.set(id, entry);
    if (options.started !== false) {
      entry.started = this.add('EVENT_TYPE_ACTIVITY_TASK_STARTED', 'activityTaskStartedEventAttributes', {
        scheduledEventId: scheduled,
        attempt: 1,
        identity: 'history-builder',
      });
    }
    return id;
  }

  completeActivity(id: string, result: unknown): this {
    const entry = this.entry(id);
    this.add('EVENT_TYPE_ACTIVITY_TASK_COMPLETED', 'activityTaskCompletedEventAttributes', {
      scheduledEventId: entry.scheduled,
      startedEventId: entry.started,
      identity: 'history-builder',
      result: { payloads: [result === undefined ? nullPayload() : jsonPayload(result)] },
    });
    return this;
  }

  /** Scheduled, started and completed in one go. */
  activity(activityType: string, result: unknown, id?: string): this {
    return this.completeActivity(this.scheduleActivity(activityType, { id }), result);
  }

  /** The last attempt failed and the retry policy gave up. */
  failActivity(id: string, failure: FailureShape): this {
    const entry = this.entry(id);
    this.add('EVENT_TYPE_ACTIVITY_TASK_FAILED', 'activityTaskFailedEventAttributes', {
      scheduledEventId: entry.scheduled,
      startedEventId: entry.started,
      identity: 'history-builder',
      retryState: 'RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED',
      failure: {
        message: failure.message,
        source: 'TypeScriptSDK',
        applicationFailureInfo: { type: failure.type ?? 'Error', nonRetryable: failure.nonRetryable ?? false },
      },
    });
    return this;
  }

  /** The RequestCancelActivityTask command of the previous workflow task. */
  cancelRequested(id: string): this {
    this.add('EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED', 'activityTaskCancelRequestedEventAttributes', {
      scheduledEventId: this.entry(id).scheduled,
      workflowTaskCompletedEventId: this.lastWorkflowTaskCompleted,
    });
    return this;
  }

  /** The activity acknowledged the cancellation (it threw after its signal was aborted). */
  activityCancelled(id: string): this {
    const entry = this.entry(id);
    const requested = [...this.events]
      .reverse()
      .find(
        (event) =>
          event.eventType === 'EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED' &&
          (event.activityTaskCancelRequestedEventAttributes as Attributes).scheduledEventId === entry.scheduled,
      );
    if (!requested) throw new Error(`activity ${id} has no cancel request`);
    this.add('EVENT_TYPE_ACTIVITY_TASK_CANCELED', 'activityTaskCanceledEventAttributes', {
      scheduledEventId: entry.scheduled,
      startedEventId: entry.started,
      latestCancelRequestedEventId: requested.eventId,
      identity: 'history-builder',
    });
    return this;
  }

  signal(signalName: string, args: unknown[] = []): this {
    this.add('EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED', 'workflowExecutionSignaledEventAttributes', {
      signalName,
      input: { payloads: args.map(jsonPayload) },
      identity: 'history-builder',
      header: {},
    });
    return this;
  }

  /**
   * TimerStarted, as the previous workflow task commanded (`sleep`, or `condition` with a timeout). The timer
   * id is the workflow's timer sequence number (1, 2, … in the order it starts timers) unless `id` is given.
   */
  startTimer(durationMs: number, options: { id?: string } = {}): string {
    const id = options.id ?? String(this.nextTimerId++);
    const startedAt = this.clock;
    const started = this.add('EVENT_TYPE_TIMER_STARTED', 'timerStartedEventAttributes', {
      timerId: id,
      startToFireTimeout: duration(durationMs),
      workflowTaskCompletedEventId: this.lastWorkflowTaskCompleted,
    });
    this.timers.set(id, { started, durationMs, startedAt });
    return id;
  }

  /** TimerFired, at the time the timer was due (the clock moves there unless it is already past it). */
  fireTimer(id: string): this {
    const timer = this.timer(id);
    this.clock = Math.max(this.clock, timer.startedAt + timer.durationMs);
    this.add('EVENT_TYPE_TIMER_FIRED', 'timerFiredEventAttributes', { timerId: id, startedEventId: timer.started });
    return this;
  }

  /** TimerCanceled: the CancelTimer command of the previous workflow task. */
  cancelTimer(id: string): this {
    this.add('EVENT_TYPE_TIMER_CANCELED', 'timerCanceledEventAttributes', {
      timerId: id,
      startedEventId: this.timer(id).started,
      workflowTaskCompletedEventId: this.lastWorkflowTaskCompleted,
      identity: 'history-builder',
    });
    return this;
  }

  /** `WorkflowHandle.cancel()` (Temporal UI, CLI, ops): cancels the workflow's root scope. */
  workflowCancelRequested(): this {
    this.add('EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED', 'workflowExecutionCancelRequestedEventAttributes', {
      cause: 'ops',
      identity: 'history-builder',
    });
    return this;
  }

  completed(result: unknown): this {
    this.add('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED', 'workflowExecutionCompletedEventAttributes', {
      result: { payloads: [jsonPayload(result)] },
      workflowTaskCompletedEventId: this.lastWorkflowTaskCompleted,
    });
    return this;
  }

  /** The workflow ended cancelled: it threw the CancelledFailure of a `WorkflowHandle.cancel()`. */
  cancelledExecution(): this {
    this.add('EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED', 'workflowExecutionCanceledEventAttributes', {
      workflowTaskCompletedEventId: this.lastWorkflowTaskCompleted,
    });
    return this;
  }

  /** A deep copy, so tests may mutate one history without touching another. */
  build(): JsonHistory {
    return JSON.parse(JSON.stringify({ events: this.events })) as JsonHistory;
  }

  private timer(id: string) {
    const timer = this.timers.get(id);
    if (!timer) throw new Error(`no timer ${id} in this history`);
    return timer;
  }

  private entry(id: string) {
    const entry = this.activities.get(id);
    if (!entry) throw new Error(`no activity ${id} in this history`);
    return entry;
  }
}
