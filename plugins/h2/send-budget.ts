/**
 * The bytes one HTTP/2 connection may have handed to node:http2 and not yet sent: response
 * DATA waiting for flow-control window sits in node's stream queues, outside nghttp2's own
 * memory accounting (`maxSessionMemory`), so a client that opens many streams and grants them
 * no window would otherwise park a buffer per stream. Streams take room before they hand bytes
 * over and give it back as node sends them; a stream that finds no room waits, in order.
 */

/** Room a waiting stream is granted (and charged) at once. */
interface Waiter {
  readonly n: number;
  readonly grant: () => void;
}

/** @internal A connection's budget of unsent response bytes. */
export class SendBudget {
  /** Bytes taken and not given back. */
  used = 0;
  private readonly limit: number;
  private waiters: Waiter[] | null = null;

  constructor(limit: number) {
    this.limit = limit;
  }

  /**
   * Takes `n` bytes when there is room and nobody waits ahead, and returns true. Room means
   * `used` below the limit: a slice may go past it by its own size, never more.
   */
  tryTake(n: number): boolean {
    if (this.used >= this.limit || (this.waiters !== null && this.waiters.length > 0)) return false;
    this.used += n;
    return true;
  }

  /** Takes `n` bytes whatever the room (bytes a stream was already granted room for). */
  force(n: number): void {
    this.used += n;
  }

  /** Calls `grant` once there is room, with `n` bytes taken for it. Returns a handle for {@link SendBudget.cancel}. */
  wait(n: number, grant: () => void): object {
    const w: Waiter = { n, grant };
    (this.waiters ??= []).push(w);
    return w;
  }

  /** A waiter that no longer wants room (its stream closed). */
  cancel(handle: object): void {
    const q = this.waiters;
    const i = q === null ? -1 : q.indexOf(handle as Waiter);
    if (i >= 0) q!.splice(i, 1);
  }

  /** Gives `n` bytes back (sent, or dropped with their stream) and grants waiters the room. */
  give(n: number): void {
    this.used -= n;
    const q = this.waiters;
    if (q === null) return;
    while (this.used < this.limit && q.length > 0) {
      const w = q.shift()!;
      this.used += w.n;
      w.grant();
    }
  }
}
