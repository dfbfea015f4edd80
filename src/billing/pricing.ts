import type { Price } from '../catalog/catalog-types';

const MICRO = 1_000_000;

/**
 * Cost of a call in kopecks from vendor-reported quantities and the catalog price (DECISIONS.md 10).
 * Rates are turned into integer micro-kopecks first so the sum is exact; `cost` is the exact number
 * shown in `usage.cost`, `amount` the whole kopecks debited (rounded up).
 */
export function priceCall(price: Price | null, quantities: { input: number; output: number }): { cost: number; amount: number } {
  if (!price) return { cost: 0, amount: 0 };
  const inputRate = BigInt(Math.round(price.input * MICRO));
  const outputRate = BigInt(Math.round(price.output * MICRO));
  const numerator = BigInt(Math.max(0, Math.round(quantities.input))) * inputRate + BigInt(Math.max(0, Math.round(quantities.output))) * outputRate;
  const denominator = BigInt(price.count);
  const microKopecks = numerator / denominator + (numerator % denominator === 0n ? 0n : 1n);
  const amount = (microKopecks + BigInt(MICRO) - 1n) / BigInt(MICRO);
  return { cost: Number(microKopecks) / MICRO, amount: Number(amount) };
}

/**
 * The most output tokens (at most `cap`) that `budget` kopecks pay for after `input` tokens, by the same exact
 * arithmetic as priceCall: `priceCall(price, {input, output: n}).amount <= budget` for the n answered. Free
 * output (no price, or a rate of 0) is limited by `cap` alone; 0 when even the input is not paid for.
 */
export function affordableOutput(price: Price | null, budget: number, input: number, cap: number): number {
  if (!price) return cap;
  const outputRate = BigInt(Math.round(price.output * MICRO));
  if (outputRate === 0n) return priceCall(price, { input, output: 0 }).amount <= budget ? cap : 0;
  const inputRate = BigInt(Math.round(price.input * MICRO));
  const spendable = BigInt(Math.max(0, Math.floor(budget))) * BigInt(MICRO) * BigInt(price.count) - BigInt(Math.max(0, Math.round(input))) * inputRate;
  if (spendable < 0n) return 0;
  const tokens = spendable / outputRate;
  return tokens > BigInt(cap) ? cap : Number(tokens);
}
