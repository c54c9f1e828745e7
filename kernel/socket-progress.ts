/**
 * Write progress on a socket, for write timeouts that bound a gap in progress rather than the
 * time until a buffer drains (a large write to a slow but steady reader drains only at its end).
 */

/**
 * Bytes the kernel actually took from the socket: Node's `bytesWritten` also counts what still
 * waits in the stream's buffer and in libuv's write queue, which is not progress.
 */
export function bytesSent(s: unknown): number {
  const x = s as { bytesWritten?: unknown; writableLength?: unknown; _handle?: { writeQueueSize?: unknown } | null };
  const total = typeof x.bytesWritten === 'number' ? x.bytesWritten : 0;
  const buffered = typeof x.writableLength === 'number' ? x.writableLength : 0;
  const queued = typeof x._handle?.writeQueueSize === 'number' ? x._handle.writeQueueSize : 0;
  return total - buffered - queued;
}
