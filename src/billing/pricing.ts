import type { Price } from '../catalog/catalog-types';

const MICRO = 1_000_000;
/** Exact costs are counted in 10⁻¹² kopeck: a price has micro-kopeck precision, and a count that divides 10⁶ divides it exactly. */
const COST_DIGITS = 12;
const COST_UNIT = 10n ** BigInt(COST_DIGITS);

export interface PricedCall {
  /** The exact cost in kopecks as a number, for `usage.cost`. */
  cost: number;
  /** The exact cost in kopecks as a decimal string (`"0.900000000000"`): what the ledger debits and carries. */
  exact: string;
  /** The whole kopecks it can take at most: its hold (rounded up). */
  amount: number;
}

/** A cost in 10⁻¹² kopeck as a decimal string of kopecks. */
export function costDecimal(units: bigint): string {
  const whole = units / COST_UNIT;
  const fraction = (units % COST_UNIT).toString().padStart(COST_DIGITS, '0');
  return `${whole}.${fraction}`;
}

/**
 * Cost of a call in kopecks from vendor-reported quantities and the catalog price (api-decisions 10). Rates are
 * turned into integer micro-kopecks (the precision of a price), and the cost into an integer of 10⁻¹² kopeck:
 * exact for every count that divides 10⁶ (1, 100, 1000, 10⁶); another count (60) is rounded down, by less than
 * 10⁻¹² kopeck, so the carry never bills more than the exact cost. `exact` is what the ledger debits: each debit is whole kopecks, the account carries the
 * fraction (ledger.ts). `amount` is the cost rounded up, the most a debit of it can take, which is what is held.
 */
export function priceCall(price: Price | null, quantities: { input: number; output: number }): PricedCall {
  if (!price) return { cost: 0, exact: costDecimal(0n), amount: 0 };
  const inputRate = BigInt(Math.round(price.input * MICRO));
  const outputRate = BigInt(Math.round(price.output * MICRO));
  const numerator =
    BigInt(Math.max(0, Math.round(quantities.input))) * inputRate +
    BigInt(Math.max(0, Math.round(quantities.output))) * outputRate;
  // micro-kopecks × count⁻¹ → 10⁻¹² kopeck
  const units = (numerator * BigInt(MICRO)) / BigInt(price.count);
  const exact = costDecimal(units);
  const amount = (units + COST_UNIT - 1n) / COST_UNIT;
  return { cost: Number(exact), exact, amount: Number(amount) };
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
  const spendable =
    BigInt(Math.max(0, Math.floor(budget))) * BigInt(MICRO) * BigInt(price.count) -
    BigInt(Math.max(0, Math.round(input))) * inputRate;
  if (spendable < 0n) return 0;
  const tokens = spendable / outputRate;
  return tokens > BigInt(cap) ? cap : Number(tokens);
}
