/**
 * The bridge to `ws`, which carries the connections that agreed permessage-deflate (framing,
 * masking, close/ping/pong, UTF-8 checks, compression) and negotiates the extension; the
 * uncompressed ones get {@link PlainSocket}. `ws` is imported on first use, so a stack that
 * never opens a WebSocket does not load it.
 *
 * switchyard does the HTTP handshake itself (the kernel's parser and serializer, its
 * connect step and hooks) and hands `ws` the socket afterwards, exactly as `ws` does
 * internally: `new WebSocket(null)`, then its negotiated subprotocol and extensions, then
 * `setSocket(socket, head, limits)` (`WebSocketServer.completeUpgrade` and the client's
 * `'upgrade'` handler in ws 8.x). Those members are not in ws's typings, so this file is the
 * one place that names them; `ws` is pinned in package.json and the tests cover this path.
 */
import type { Duplex } from 'node:stream';
import type { WebSocket as WsSocket } from 'ws';
import { PlainSocket, type FrameSocket } from './plain-socket.js';

/** A `permessage-deflate` negotiation state (ws's `PerMessageDeflate`). */
export interface Deflate {
  /** The parameters agreed (set by `accept`). */
  readonly params: Record<string, unknown> | null;
  /** The client's offer. */
  offer(): Record<string, unknown>;
  /** Server: picks one of the client's offers; client: checks the server's answer. Throws when none is acceptable. */
  accept(configurations: Record<string, (string | true)[]>[]): Record<string, unknown>;
  /** Releases zlib streams. */
  cleanup(): void;
}

/** Options of ws's `PerMessageDeflate`. */
interface DeflateOptions {
  isServer: boolean;
  maxPayload: number;
  /** Messages below this size are sent uncompressed (ws default 1024). */
  threshold?: number;
  clientMaxWindowBits?: boolean | number;
}

/** What the bridge uses of the `ws` module. */
export interface WsModule {
  readonly WebSocket: typeof WsSocket;
  readonly PerMessageDeflate: (new (options: DeflateOptions) => Deflate) & { readonly extensionName: string };
  readonly extension: {
    parse(header: string): Record<string, Record<string, (string | true)[]>[]>;
    format(extensions: Record<string, unknown>): string;
  };
}

/** ws's members that its own upgrade code sets (ws 8.x). */
interface WsInternals {
  _isServer: boolean;
  _protocol: string;
  _extensions: Record<string, Deflate>;
  setSocket(socket: Duplex, head: Buffer, options: Record<string, unknown>): void;
}

let loading: Promise<WsModule> | null = null;
let loaded: WsModule | null = null;

/** Imports `ws` once; later calls return the same module. */
export function loadWs(): Promise<WsModule> {
  if (loading === null) {
    loading = import('ws').then((m) => {
      const mod = m as unknown as WsModule;
      if (typeof mod.PerMessageDeflate !== 'function' || typeof mod.extension?.parse !== 'function') {
        throw new Error('the installed ws does not export PerMessageDeflate and extension (ws 8.x expected)');
      }
      loaded = mod;
      return mod;
    });
  }
  return loading;
}

/** The module once {@link loadWs} resolved, else null (for synchronous paths after a load). */
export function wsLoaded(): WsModule | null {
  return loaded;
}

/** The limits and settings a socket gets. */
export interface AttachOptions {
  /** Server side (expects masked frames, sends unmasked). */
  readonly isServer: boolean;
  /** The subprotocol agreed, or null. */
  readonly protocol: string | null;
  /** The agreed permessage-deflate state, or null for plain frames. */
  readonly deflate: Deflate | null;
  /** Largest frame and (decompressed) message. */
  readonly maxPayload: number;
  /** Most fragments per message (0: unbounded). */
  readonly maxFragments: number;
}

/** Name of the permessage-deflate extension. */
export const PERMESSAGE_DEFLATE = 'permessage-deflate';

/** How long closing waits for the peer's close frame before dropping the connection. */
const CLOSE_TIMEOUT = 30_000;

/**
 * The connection over `socket`, which must have completed the HTTP handshake; `head` holds
 * bytes already read past it. The socket is resumed. Uncompressed connections get a
 * {@link PlainSocket} (this project's frame codec, shorter from a message in to its answer
 * out); permessage-deflate ones a ws `WebSocket`.
 */
export function attachSocket(mod: WsModule, socket: Duplex, head: Uint8Array, o: AttachOptions): FrameSocket {
  if (o.deflate === null) {
    const plain = new PlainSocket(socket, head, { isServer: o.isServer, maxPayload: o.maxPayload, maxFragments: o.maxFragments, closeTimeout: CLOSE_TIMEOUT });
    socket.resume();
    return plain;
  }
  // autoPong: ws answers pings itself; closeTimeout: how long close() waits for the peer's close frame.
  const Ctor = mod.WebSocket as unknown as new (address: null, protocols: undefined, options: Record<string, unknown>) => WsSocket;
  const raw = new Ctor(null, undefined, { autoPong: true, maxPendingAutoPongs: 60, closeTimeout: CLOSE_TIMEOUT });
  const w = raw as unknown as WsInternals;
  w._isServer = o.isServer;
  if (o.protocol !== null) w._protocol = o.protocol;
  if (o.deflate !== null) w._extensions = { [PERMESSAGE_DEFLATE]: o.deflate };
  w.setSocket(socket, Buffer.isBuffer(head) ? head : Buffer.from(head.buffer, head.byteOffset, head.length), {
    allowSynchronousEvents: true,
    maxBufferedChunks: 256 * 1024,
    maxFragments: o.maxFragments,
    maxPayload: o.maxPayload,
    skipUTF8Validation: false,
  });
  // The kernel hands sockets over explicitly paused; ws only adds a 'data' listener.
  socket.resume();
  return raw as unknown as FrameSocket;
}
