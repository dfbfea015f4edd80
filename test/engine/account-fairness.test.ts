import { createResponse, waitForFinal } from '../responses/helpers';
import { TestApp } from '../support/harness';

/**
 * api-decisions 36: the embedded engine's slots are shared between accounts. One account's flood of long jobs
 * neither takes every slot (its share caps it) nor queues ahead of another account's jobs (claims take accounts
 * in turn). Asserted in the order the jobs finished, not in milliseconds.
 */
const SLOW = '/delay 600 /words 3'; // about 1.8 s in its slot
const QUICK = '/words 3';

/** Creates background Responses of `key` one after another (so their jobs are written in this order). */
async function create(app: TestApp, key: string, input: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index++) {
    const created = await createResponse(app, key, { input, background: true });
    expect(created.status).toBe(200);
    ids.push(created.body.id);
  }
  return ids;
}

/**
 * Waits for every Response to complete; answers their completion times, sorted (completed_at, written by the
 * finalisation that makes a Response final; the job's own finish is group-committed after it).
 */
async function finishTimes(app: TestApp, key: string, ids: string[]): Promise<number[]> {
  for (const id of ids) expect((await waitForFinal(app, key, id)).status).toBe('completed');
  const rows = await app.runtime.deps.db
    .selectFrom('responses')
    .select(['id', 'completed_at'])
    .where('id', 'in', ids)
    .execute();
  return rows.map((row) => row.completed_at!.getTime()).sort((x, y) => x - y);
}

/** An app whose embedded engine has `slots`, `share` of them for one account; closed after the suite. */
function appWith(slots: number, share: number) {
  const holder: { app?: TestApp } = {};
  beforeAll(async () => {
    holder.app = await TestApp.start({
      engine: 'embedded',
      env: { ENGINE_CONCURRENCY: String(slots), ENGINE_CONCURRENCY_PER_ACCOUNT: String(share) },
    });
  });
  afterAll(() => holder.app?.close());
  return holder;
}

/** Account A creates `flood` slow Responses, then account B `others` quick ones: the finish times of each. */
async function floodThenOthers(app: TestApp, flood: number, others: number) {
  const a = await app.createAccount({ balance: 10_000_000 });
  const b = await app.createAccount({ balance: 10_000_000 });
  const aIds = await create(app, a.key, SLOW, flood);
  const bIds = await create(app, b.key, QUICK, others);
  const [aFinished, bFinished] = await Promise.all([finishTimes(app, a.key, aIds), finishTimes(app, b.key, bIds)]);
  return { aFinished, bFinished };
}

describe("one account's flood of long jobs", () => {
  describe('with a share of half the slots', () => {
    const holder = appWith(4, 2);

    it("leaves slots to another account: B's jobs run beside A's first two and finish before any of A's", async () => {
      const { aFinished, bFinished } = await floodThenOthers(holder.app!, 4, 2);
      // Before, A's four took every slot and B's two waited for the first of them to end.
      expect(Math.max(...bFinished)).toBeLessThan(aFinished[0]!);
    });
  });

  describe('with every slot taken', () => {
    const holder = appWith(2, 2);

    it("claims accounts in turn: B's waiting job is claimed with A's third, not after A's whole backlog", async () => {
      const { aFinished, bFinished } = await floodThenOthers(holder.app!, 4, 1);
      // A's first two run, A's other two and B's one wait. Before, the oldest waiting were claimed first: A's two,
      // then B's after them.
      expect(bFinished[0]!).toBeLessThan(aFinished[2]!);
    });
  });
});
