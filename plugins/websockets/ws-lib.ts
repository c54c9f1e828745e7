/**
 * What the websockets plugin takes from `ws`: permessage-deflate's negotiation
 * (`PerMessageDeflate`: the handshake's offer and answer, the parameters agreed) and the
 * extension header parser; the messages are compressed by {@link MessageZlib}. Framing, masking, close, ping and pong are the plugin's own ({@link FrameConnection}).
 * `ws` is imported on first use, so a stack that never opens a WebSocket does not load it.
 * `PerMessageDeflate` and `extension` are exported by ws but not in its typings: this file is
 * the one place that names them; `ws` is pinned in package.json and the tests cover this path.
 */
import type { Duplex } from 'node:stream';
import { FrameConnection, type MessageDeflate } from './frame-connection.js';
import { MessageZlib } from './message-zlib.js';

export { PERMESSAGE_DEFLATE } from './frame-connection.js';

/** A `permessage-deflate` state (ws's `PerMessageDeflate`): negotiation, then compression. */
export interface Deflate extends MessageDeflate {
  /** The parameters agreed (set by `accept`). */
  readonly params: Record<string, unknown> | null;
  /** The client's offer. */
  offer(): Record<string, unknown>;
  /** Server: picks one of the client's offers; client: checks the server's answer. Throws when none is acceptable. */
  accept(configurations: Record<string, (string | true)[]>[]): Record<string, unknown>;
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
  readonly PerMessageDeflate: (new (options: DeflateOptions) => Deflate) & { readonly extensionName: string };
  readonly extension: {
    parse(header: string): Record<string, Record<string, (string | true)[]>[]>;
    format(extensions: Record<string, unknown>): string;
  };
}

let loading: Promise<WsModule> | null = null;

/** Imports `ws` once; later calls return the same module. */
export function loadWs(): Promise<WsModule> {
  if (loading === null) {
    loading = import('ws').then((m) => {
      const mod = m as unknown as WsModule;
      if (typeof mod.PerMessageDeflate !== 'function' || typeof mod.extension?.parse !== 'function') {
        throw new Error('the installed ws does not export PerMessageDeflate and extension (ws 8.x expected)');
      }
      return mod;
    });
  }
  return loading;
}

/** The limits and settings a socket gets. */
export interface AttachOptions {
  /** Server side (expects masked frames, sends unmasked). */
  readonly isServer: boolean;
  /** The agreed permessage-deflate state, or null for plain frames. */
  readonly deflate: Deflate | null;
  /** Largest frame and (decompressed) message. */
  readonly maxPayload: number;
  /** Most fragments per message (0: unbounded). */
  readonly maxFragments: number;
}

/** How long closing waits for the peer's close frame before dropping the connection. */
const CLOSE_TIMEOUT = 30_000;

/**
 * The connection over `socket`, which must have completed the HTTP handshake; `head` holds
 * bytes already read past it: switchyard's frame codec ({@link FrameConnection}), compressing
 * with {@link MessageZlib} when the handshake agreed permessage-deflate. The socket is resumed.
 */
export function attachSocket(socket: Duplex, head: Uint8Array, o: AttachOptions): FrameConnection {
  // ws agreed the parameters; the compression itself is MessageZlib's (one zlib trip per message).
  const deflate = o.deflate !== null && o.deflate.params !== null ? new MessageZlib(o.deflate.params, o.isServer, o.maxPayload) : null;
  const conn = new FrameConnection(socket, head, { isServer: o.isServer, maxPayload: o.maxPayload, maxFragments: o.maxFragments, closeTimeout: CLOSE_TIMEOUT, deflate });
  // The kernel hands sockets over explicitly paused.
  socket.resume();
  return conn;
}
