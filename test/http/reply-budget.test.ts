import { EventEmitter } from 'node:events';
import type { Context } from 'koa';
import { createReplyBudget } from '../../src/http/reply-budget';
import { useTestApp } from '../support/harness';

/** A request (of `accountId`) as the budget sees it: its response emits prefinish/close, its socket may be gone. */
function fakeRequest(accountId = 'acct_a') {
  const res = Object.assign(new EventEmitter(), { destroyed: false });
  const ctx = { res, req: { socket: { destroyed: false } }, state: { auth: { accountId } } } as unknown as Context;
  return { ctx, handOver: () => res.emit('prefinish'), clientGone: () => res.emit('close') };
}
const MiB = 1024 * 1024;
/** Every admission decided so far has run its callbacks. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('reply budget: large replies are built a budget at a time', () => {
  it('admits in arrival order while the budget lasts, and gives each share back when its reply is handed over', async () => {
    const budget = createReplyBudget(8 * MiB);
    const [first, second, third] = [fakeRequest(), fakeRequest(), fakeRequest()];
    const admitted: string[] = [];
    await budget.admit(first.ctx, 4 * MiB).then(() => admitted.push('first'));
    await budget.admit(second.ctx, 4 * MiB).then(() => admitted.push('second'));
    const waiting = budget.admit(third.ctx, 4 * MiB).then(() => admitted.push('third'));
    await Promise.resolve();
    expect([admitted, budget.inUse, budget.waiting]).toEqual([['first', 'second'], 8 * MiB, 1]);
    first.handOver();
    await waiting;
    expect([admitted, budget.inUse]).toEqual([['first', 'second', 'third'], 8 * MiB]);
    // A client gone gives its share back too; prefinish and close after it are not counted twice.
    second.clientGone();
    second.handOver();
    third.handOver();
    expect(budget.inUse).toBe(0);
  });

  it('gives one account at most its share, and admits waiting accounts in turn (api-decisions 36)', async () => {
    const budget = createReplyBudget(4 * MiB, 2 * MiB);
    const admitted: string[] = [];
    const requests = new Map<string, ReturnType<typeof fakeRequest>>();
    const ask = (name: string, account: string) => {
      const request = fakeRequest(account);
      requests.set(name, request);
      return budget.admit(request.ctx, MiB).then(() => admitted.push(name));
    };
    // A's crowd arrives first: two are admitted (its share), the rest wait although the budget has room.
    const crowd = ['a1', 'a2', 'a3', 'a4', 'a5'].map((name) => ask(name, 'acct_a'));
    await settled();
    expect([admitted, budget.inUse, budget.waiting]).toEqual([['a1', 'a2'], 2 * MiB, 3]);
    // B, arriving after, is admitted at once within the room A's share left; C too.
    const others = [ask('b1', 'acct_b'), ask('b2', 'acct_b'), ask('c1', 'acct_c')];
    await settled();
    expect(admitted).toEqual(['a1', 'a2', 'b1', 'b2']);
    // The budget full, shares coming back go to the waiting accounts in turn: C (waiting since before A's turn
    // came round), then A.
    requests.get('b1')!.handOver();
    await settled();
    requests.get('a1')!.handOver();
    await settled();
    expect(admitted).toEqual(['a1', 'a2', 'b1', 'b2', 'c1', 'a3']);
    for (const name of ['a2', 'b2', 'c1', 'a3']) requests.get(name)!.handOver();
    await Promise.all([...crowd, ...others]);
    for (const name of ['a4', 'a5']) requests.get(name)!.handOver();
    expect([budget.inUse, budget.waiting]).toEqual([0, 0]);
  });

  it('admits alone a request larger than the whole budget', async () => {
    const budget = createReplyBudget(4 * MiB);
    const small = fakeRequest();
    await budget.admit(small.ctx, 1 * MiB);
    const huge = fakeRequest();
    const admitted = budget.admit(huge.ctx, 9 * MiB);
    await Promise.resolve();
    expect(budget.waiting).toBe(1);
    small.handOver();
    await admitted;
    expect(budget.inUse).toBe(9 * MiB);
  });

  it('builds nothing for a client that went away while it waited', async () => {
    const budget = createReplyBudget(4 * MiB);
    const holder = fakeRequest();
    await budget.admit(holder.ctx, 4 * MiB);
    const gone = fakeRequest();
    const admitted = budget.admit(gone.ctx, 4 * MiB);
    (gone.ctx.req.socket as { destroyed: boolean }).destroyed = true;
    holder.handOver();
    await expect(admitted).rejects.toMatchObject({ status: 499 });
    expect(budget.inUse).toBe(0);
  });
});

describe('reply budget in the app: pages of items share it', () => {
  const suite = useTestApp({ app: { env: { HTTP_REPLY_BUILD_BYTES: String(4 * MiB) } } });

  it('serves many readers of large pages at once, one page in the making at a time', async () => {
    const created = await suite.app.request('POST', '/v2/conversations', {
      key: suite.key,
      body: { items: [{ type: 'message', role: 'user', content: 'p'.repeat(3 * MiB) }] },
    });
    const pages = await Promise.all(
      Array.from({ length: 6 }, () =>
        suite.app.request('GET', `/v2/conversations/${created.body.id}/items`, { key: suite.key }),
      ),
    );
    expect(pages.map((page) => page.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(suite.app.runtime.deps.replyBudget.inUse).toBe(0);
    const thread = await suite.app.request('POST', '/v2/threads', {
      key: suite.key,
      body: { messages: [{ role: 'user', content: 'q'.repeat(MiB) }] },
    });
    const messages = await Promise.all(
      Array.from({ length: 3 }, () =>
        suite.app.request('GET', `/v2/threads/${thread.body.id}/messages`, { key: suite.key }),
      ),
    );
    expect(messages.map((page) => page.status)).toEqual([200, 200, 200]);
    expect(suite.app.runtime.deps.replyBudget.inUse).toBe(0);
  });
});
