/**
 * Counts turns of the event loop (one setImmediate a turn) until stopped; with `when`, only the turns in which it
 * holds. Tests count turns rather than milliseconds, which a loaded machine makes noisy.
 */
export function countTurns(when: () => boolean = () => true) {
  let turns = 0;
  let running = true;
  const tick = () => {
    if (!running) return;
    if (when()) turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return {
    get turns() {
      return turns;
    },
    stop: () => (running = false),
  };
}
