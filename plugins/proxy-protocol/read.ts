/**
 * Reads a connection's PROXY header off its socket (the `server.preamble` reader): as the bytes
 * come, across as many reads as they take, never holding more than the header's bound; then
 * gives back what followed the header and leaves the socket paused.
 */
import { Buffer } from 'node:buffer';
import type { Socket } from 'node:net';
import { ParseError, type Preamble } from '../../kernel/index.js';
import { parseProxyHeader, type ProxyHeader } from './header.js';

/**
 * Resolves to the header at the start of `socket` once it is whole; rejects with `ParseError`
 * when the bytes are not one (no header, a bad one, one past its bound) or the connection ends
 * before it is whole.
 */
export function readProxyHeader(socket: Socket): Promise<ProxyHeader> {
  return new Promise((resolve, reject) => {
    let got: Buffer | null = null;
    const finish = (): void => {
      socket.removeListener('data', onData);
      socket.removeListener('end', onEnd);
      socket.removeListener('close', onEnd);
      socket.removeListener('error', onError);
    };
    const onData = (chunk: Buffer): void => {
      got = got === null ? chunk : Buffer.concat([got, chunk]);
      let header: ProxyHeader | null;
      try {
        header = parseProxyHeader(got);
      } catch (err) {
        finish();
        reject(err as Error);
        return;
      }
      if (header === null) return;
      finish();
      socket.pause();
      if (got.length > header.length) socket.unshift(got.subarray(header.length));
      resolve(header);
    };
    const onEnd = (): void => {
      finish();
      reject(new ParseError('the connection ended before its PROXY protocol header was whole'));
    };
    const onError = (err: Error): void => {
      finish();
      reject(err);
    };
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('close', onEnd);
    socket.once('error', onError);
  });
}

/** What the preamble tells the server: the relayed client when `trusted`, else nothing (the socket's own address stands). */
export function preambleOf(header: ProxyHeader, trusted: boolean): Preamble {
  return { peer: trusted ? header.source : null };
}
