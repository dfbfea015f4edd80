/**
 * A debit under the carry (api-decisions 10): its amount is its exact cost less what the account had paid ahead
 * (the carry before it), rounded up, and its metadata records the cost and the carry after it. For tests of
 * one slice that bill on an account shared with other tests, whose carry before is not known in advance.
 */
export function expectCarried(
  debit: { amount: number | string; metadata: Record<string, unknown> },
  cost: number,
): void {
  const amount = Number(debit.amount);
  expect(debit.metadata.cost).toBeCloseTo(cost, 9);
  const after = Number(debit.metadata.carry);
  const before = after - amount + cost;
  expect(after).toBeGreaterThanOrEqual(0);
  expect(after).toBeLessThan(1);
  expect(before).toBeGreaterThan(-1e-9);
  expect(before).toBeLessThan(1);
  expect(amount).toBe(Math.max(0, Math.ceil(cost - before - 1e-9)));
}
