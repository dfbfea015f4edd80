/** Wire timestamps are Unix seconds (spec: "timestamps in objects are Unix seconds"). */
export const toUnixSeconds = (date: Date): number => Math.floor(date.getTime() / 1000);

/** Waits for `until` (given a function that resolves it) or `ms`, whichever comes first. */
export async function waitAtMost(ms: number, until: (resolve: () => void) => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    new Promise<void>((resolve) => until(resolve)),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
}
