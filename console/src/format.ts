// Whole kopecks show two decimals; a Response's cost can be a fraction of a kopeck (the ledger debits whole ones).
const rubles = new Intl.NumberFormat('en-GB', {
  style: 'currency',
  currency: 'RUB',
  minimumFractionDigits: 2,
  maximumFractionDigits: 6,
});
const integer = new Intl.NumberFormat('en-GB');
const dateTime = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short' });

/** The ledger counts kopecks (api-decisions 10): shown as rubles with two decimals. */
export const money = (kopecks: number | null | undefined) =>
  kopecks === null || kopecks === undefined ? '—' : rubles.format(kopecks / 100);

export const count = (value: number | null | undefined) =>
  value === null || value === undefined ? '—' : integer.format(value);

/** Unix seconds as a local date and time. */
export const when = (seconds: number | null | undefined) => (seconds ? dateTime.format(new Date(seconds * 1000)) : '—');

export function duration(milliseconds: number | null | undefined): string {
  if (milliseconds === null || milliseconds === undefined) return '—';
  if (milliseconds < 1000) return `${Math.round(milliseconds)} ms`;
  if (milliseconds < 60_000) return `${(milliseconds / 1000).toFixed(1)} s`;
  return `${Math.floor(milliseconds / 60_000)} min ${Math.round((milliseconds % 60_000) / 1000)} s`;
}

/** A UTC day as the usage endpoint names it (YYYY-MM-DD). */
export const utcDay = (date: Date) => date.toISOString().slice(0, 10);
