import net from 'node:net';

/**
 * A socket for pg that sends everything written in one tick as one write. pg writes each protocol message
 * of a query separately (Parse, Bind, Describe, Execute, Sync: five `write` calls, each its own system call
 * on an idle socket); corking on the first write and uncorking on the next tick hands them to the kernel as
 * a single `writev`. Nothing waits longer than the current tick, and a socket already corked by someone else
 * is left to them. Given to pg through its public `stream` option (see openDatabase).
 */
export class CoalescingSocket extends net.Socket {
  /** An uncork is due on the next tick (internal to the coalescing write). */
  uncorkScheduled = false;

  // net.Socket#connect resets `write` to net.Socket.prototype.write as an own property (undoing its
  // write-after-end guard), which would bypass an override; the coalescing write is put back after it.
  override connect(...args: unknown[]): this {
    (super.connect as (...rest: unknown[]) => this)(...args);
    this.write = coalescingWrite;
    return this;
  }
}

function coalescingWrite(this: CoalescingSocket, ...args: unknown[]): boolean {
  if (!this.uncorkScheduled && this.writableCorked === 0) {
    this.uncorkScheduled = true;
    this.cork();
    process.nextTick(() => {
      this.uncorkScheduled = false;
      this.uncork();
    });
  }
  return (net.Socket.prototype.write as (...rest: unknown[]) => boolean).apply(this, args);
}
