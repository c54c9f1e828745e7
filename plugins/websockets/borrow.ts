/**
 * A byte stream lent to us: `open(socket, …)` runs a WebSocket over a stream the caller
 * connected and keeps owning, so nothing we (or ws) do may end or destroy it. The lender's
 * stream is wrapped in a Duplex whose end sends nothing and whose destroy only detaches it.
 */
import { Buffer } from 'node:buffer';
import { Duplex } from 'node:stream';

/** A Duplex that reads and writes through `socket` but never ends or destroys it. */
export function borrow(socket: Duplex): Duplex {
  const onData = (chunk: Buffer): void => {
    if (!wrapper.push(chunk)) socket.pause();
  };
  const onEnd = (): void => {
    wrapper.push(null);
  };
  const onError = (err: Error): void => {
    wrapper.destroy(err);
  };
  const onClose = (): void => {
    wrapper.destroy();
  };
  const detach = (): void => {
    socket.removeListener('data', onData);
    socket.removeListener('end', onEnd);
    socket.removeListener('error', onError);
    socket.removeListener('close', onClose);
  };
  const wrapper = new Duplex({
    read(): void {
      socket.resume();
    },
    write(chunk: Buffer, _encoding, callback): void {
      if (socket.destroyed || socket.writableEnded) {
        callback(new Error('the lent stream is closed'));
        return;
      }
      socket.write(chunk, callback);
    },
    final(callback): void {
      // The caller owns the stream: ending our side sends nothing (no FIN); reading goes on
      // until the peer ends or the wrapper is destroyed (ws destroys it after the close handshake).
      callback();
    },
    destroy(err, callback): void {
      detach();
      callback(err);
    },
  });
  socket.on('data', onData);
  socket.on('end', onEnd);
  socket.on('error', onError);
  socket.on('close', onClose);
  // Like a socket the kernel hands over: paused until the reader asks. Small frames must not
  // wait for Nagle's algorithm (ws does the same to every TCP socket it is given).
  socket.pause();
  (socket as Duplex & { setNoDelay?: (on: boolean) => unknown }).setNoDelay?.(true);
  return wrapper;
}
