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
