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
