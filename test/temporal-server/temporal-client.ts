import { Client, Connection } from '@temporalio/client';
import { temporalAddress } from '../support/harness';

/**
 * What the tests of this folder share: they run only under `npm run test:temporal` (TEST_TEMPORAL_ADDRESS; the
 * apps they start then run on that server with a worker of their own, test/support/harness.ts) and read the
 * workflows as an operator would, with a client of the server.
 */
export const describeOnTemporal: jest.Describe = temporalAddress ? describe : describe.skip;

if (!temporalAddress) {
  process.stdout.write(
    '\nTemporal server tests skipped: run `npm run test:temporal` (a server from `npm run temporal`).\n\n',
  );
}

export async function connectClient(): Promise<Client & { close(): Promise<void> }> {
  const connection = await Connection.connect({ address: temporalAddress! });
  const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' });
  return Object.assign(client, { close: () => connection.close() });
}

/**
 * The activities a workflow ran, in order, as `[type, where]`: the task queue a (remote) activity was scheduled on, or
 * `local` for a local activity, which leaves a marker in the history instead (its data names the activity type).
 */
export function activitiesRan(events: ReadonlyArray<Record<string, any>>): Array<[string, string]> {
  return events.flatMap((event): Array<[string, string]> => {
    if (event.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED') {
      const attributes = event.activityTaskScheduledEventAttributes;
      return [[attributes.activityType.name, attributes.taskQueue.name]];
    }
    const marker = event.markerRecordedEventAttributes;
    if (event.eventType !== 'EVENT_TYPE_MARKER_RECORDED' || marker.markerName !== 'core_local_activity') return [];
    const [payload] = marker.details.data.payloads;
    const data = JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8')) as { activity_type: string };
    return [[data.activity_type, 'local']];
  });
}
