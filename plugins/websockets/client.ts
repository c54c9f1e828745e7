/**
 * Client side: `open(url | socket, handler, options)`. The handshake is the kernel's
 * `upgradeRequest` (its connect step, so proxies apply; its HTTP/1 serializer and parser; the
 * `client.onUpgrade` taps); this file builds the request, checks the 101 as RFC 6455 §4.1
 * and RFC 7692 ask, and runs the handler over ws.
 */
import { Duplex } from 'node:stream';
import {
  ArgumentError,
  checkCallOptionNames,
  EXCHANGE_TIMEOUT_OPTIONS,
  headerContains,
  nodeCrypto,
  pickExchangeTimeouts,
  Headers,
  urlHint,
  Request,
  socketPeer,
  RequestContext,
  upgradeRequest,
  type CallOptions,
  type Response,
} from '../../kernel/index.js';
import { WebSocketHandshakeError } from './errors.js';
import { acceptKey } from './handshake.js';
import { resolveLimits, subprotocolList, type WebSocketOpenOptions } from './options.js';
import { defaultKernel } from './plugin.js';
import { borrow } from './borrow.js';
import { runHandler, type WebSocketHandler } from './session.js';
import { WebSocket } from './websocket.js';
import { attachSocket, loadWs, PERMESSAGE_DEFLATE, type Deflate, type WsModule } from './ws-lib.js';

/** Where to connect: the URL as given and the `http(s):` URL the handshake is sent to. */
function target(to: string | URL | Duplex, o: WebSocketOpenOptions): { shown: string; httpUrl: URL } {
  if (to instanceof Duplex) {
    const host = o.host;
    if (typeof host !== 'string' || host === '') throw new ArgumentError('WebSockets.open(socket, handler, { host, target }): host (the Host header) is required with a socket');
    const path = o.target ?? '/';
    if (typeof path !== 'string' || !path.startsWith('/')) throw new ArgumentError(`WebSockets.open: target must be a path starting with '/', got ${JSON.stringify(path)}`);
    return { shown: `ws://${host}${path}`, httpUrl: new URL(`http://${host}${path}`) };
  }
  let u: URL;
  try {
    u = to instanceof URL ? new URL(to.href) : new URL(to);
  } catch {
    const hint = typeof to === 'string' ? urlHint(to, 'ws') : '';
    throw new ArgumentError(`WebSockets.open: invalid URL ${JSON.stringify(String(to))}${hint !== '' ? `: ${hint}` : ''}`);
  }
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:') {
    const hint = typeof to === 'string' ? urlHint(to, 'ws') : '';
    if (hint !== '') throw new ArgumentError(`WebSockets.open: invalid URL ${JSON.stringify(to)}: ${hint}`);
    throw new ArgumentError(`WebSockets.open takes ws:// or wss:// URLs, got ${u.protocol}//…`);
  }
  if (u.hash !== '') throw new ArgumentError('WebSockets.open: a WebSocket URL has no fragment (#…)');
  const shown = u.href;
  u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
  return { shown, httpUrl: u };
}

/** Checks a 101 against what we sent; returns the deflate state agreed, or null. */
function check101(mod: WsModule, response: Response, key: string, offered: readonly string[], deflate: Deflate | null, shown: string): Deflate | null {
  const h = response.headers;
  const fail = (why: string): never => {
    throw new WebSocketHandshakeError(`WebSocket handshake with ${shown} failed: ${why}`, response);
  };
  if (!headerContains(h, 'Upgrade', 'websocket')) fail('the 101 response has no Upgrade: websocket');
  if (!headerContains(h, 'Connection', 'upgrade')) fail('the 101 response has no Connection: upgrade');
  if (h.get('Sec-WebSocket-Accept') !== acceptKey(key)) fail('wrong Sec-WebSocket-Accept');
  const protocol = h.get('Sec-WebSocket-Protocol');
  if (protocol !== undefined && !offered.includes(protocol)) fail(`the server chose subprotocol ${JSON.stringify(protocol)}, which was not offered`);
  const ext = h.getAll('Sec-WebSocket-Extensions').join(',');
  if (ext === '') return null;
  if (deflate === null) fail(`the server answered Sec-WebSocket-Extensions: ${ext}, but no extension was offered`);
  let parsed: Record<string, Record<string, (string | true)[]>[]>;
  try {
    parsed = mod.extension.parse(ext);
  } catch {
    return fail(`invalid Sec-WebSocket-Extensions: ${ext}`);
  }
  const names = Object.keys(parsed);
  if (names.length !== 1 || names[0] !== PERMESSAGE_DEFLATE) fail(`the server answered extensions that were not offered: ${ext}`);
  try {
    deflate!.accept(parsed[PERMESSAGE_DEFLATE]!);
  } catch (err) {
    fail(`unacceptable permessage-deflate parameters: ${(err as Error).message}`);
  }
  return deflate;
}

/** The names of {@link WebSocketOpenOptions} that `open` reads itself (`proxy` and `cookiejar` are the plugins'). */
const OPEN_OPTIONS: ReadonlySet<string> = new Set([
  'maxFrameSize',
  'maxFragmentation',
  'headers',
  'subprotocols',
  'compress',
  ...EXCHANGE_TIMEOUT_OPTIONS,
  'tls',
  'localAddr',
  'kernel',
  'context',
  'signal',
  'target',
  'host',
] satisfies (keyof WebSocketOpenOptions)[]);

/** The plugins' call options `open` takes (`cookiejar`, `proxy`), for the handshake's client taps; undefined when none is set. */
function pluginCallOptions(o: WebSocketOpenOptions): CallOptions | undefined {
  if (o.cookiejar === undefined && o.proxy === undefined) return undefined;
  const out: CallOptions = {};
  if (o.cookiejar !== undefined) out.cookiejar = o.cookiejar;
  if (o.proxy !== undefined) out.proxy = o.proxy;
  return out;
}

/**
 * Opens a WebSocket to a `ws://` or `wss://` URL, or over `socket` (a byte stream the caller
 * connected and keeps owning: never ended or destroyed here; pass `host` and `target`), runs
 * `handler(ws)`, closes the connection (1000; 1011 when the handler threw) and resolves to
 * the handler's result (or rethrows its error).
 *
 * Handshake failures: `WebSocketHandshakeError` for any status but 101 (its `status` and
 * `response`) and for a 101 that breaks RFC 6455; `TimeoutError` with operation
 * `websocket handshake` for `requestTimeout`, `responseHeaderTimeout`, `readIdleTimeout`
 * and `writeIdleTimeout` (`connect`/`tls_handshake` for `connectTimeout`); the connect errors
 * (`DNSError`, `ConnectError`, `TLSHandshakeError`); `ArgumentError` for bad arguments.
 */
export async function open<T>(to: string | URL | Duplex, handler: WebSocketHandler<T>, options: WebSocketOpenOptions = {}): Promise<T> {
  if (typeof handler !== 'function') throw new ArgumentError(`WebSockets.open(url, handler, options): handler must be a function (ws) => …, got ${typeof handler}`);
  if (typeof options !== 'object' || options === null) throw new ArgumentError('WebSockets.open: options must be an object');
  const kernel = options.kernel ?? defaultKernel();
  // proxy and cookiejar are the plugins' options: checked as a client call's are, against this kernel.
  checkCallOptionNames(options, 'WebSockets.open', kernel, OPEN_OPTIONS);
  const { shown, httpUrl } = target(to, options);
  const limits = resolveLimits(options, 'WebSockets.open');
  const offered = subprotocolList(options.subprotocols, 'WebSockets.open');
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new ArgumentError('WebSockets.open: signal must be an AbortSignal');
  const mod = await loadWs();

  const key = nodeCrypto().randomBytes(16).toString('base64');
  const headers = new Headers(options.headers ?? undefined);
  headers.set('Upgrade', 'websocket');
  headers.set('Connection', 'Upgrade');
  headers.set('Sec-WebSocket-Key', key);
  headers.set('Sec-WebSocket-Version', '13');
  if (offered.length > 0) headers.set('Sec-WebSocket-Protocol', offered.join(', '));
  else headers.delete('Sec-WebSocket-Protocol');
  let deflate: Deflate | null = null;
  if (options.compress === true) {
    deflate = new mod.PerMessageDeflate({ isServer: false, maxPayload: limits.maxFrameSize, clientMaxWindowBits: true });
    headers.set('Sec-WebSocket-Extensions', mod.extension.format({ [PERMESSAGE_DEFLATE]: [deflate.offer()] }));
  } else headers.delete('Sec-WebSocket-Extensions');
  const request = new Request('GET', httpUrl.pathname + httpUrl.search, { headers, copyHeaders: false, host: httpUrl.host });
  request.url = httpUrl.href;

  const ctx = options.context ?? new RequestContext();
  const signal = options.signal;
  const onAbort = (): void => ctx.cancel('WebSocket canceled by its AbortSignal');
  if (signal !== undefined) {
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  }
  const owned = !(to instanceof Duplex);
  try {
    let agreed: Deflate | null = null;
    const { response, socket, head } = await upgradeRequest(request, {
      kernel,
      socket: owned ? null : borrow(to),
      ...pickExchangeTimeouts(options),
      tls: options.tls,
      localAddress: options.localAddr,
      context: ctx,
      callOptions: pluginCallOptions(options),
      timeoutOperation: 'websocket handshake',
      // RFC 6455 first: the client.onUpgrade taps only see a handshake that is valid.
      check: (res) => {
        agreed = check101(mod, res, key, offered, deflate, shown);
      },
    });
    if (response.status !== 101) {
      socket.destroy();
      throw new WebSocketHandshakeError(
        `WebSocket handshake with ${shown} failed: the server answered ${response.status}${response.reason !== '' ? ` ${response.reason}` : ''} instead of 101 Switching Protocols`,
        response,
      );
    }
    if (agreed === null) deflate?.cleanup();
    deflate = null;
    const protocol = response.headers.get('Sec-WebSocket-Protocol') ?? null;
    const raw = attachSocket(socket, head, { isServer: false, deflate: agreed, maxPayload: limits.maxFrameSize, maxFragments: limits.maxFragmentation });
    const ws = new WebSocket(raw, { isServer: false, request, response, subprotocol: protocol, peer: socketPeer(owned ? socket : to) });
    // Canceling the call during the session says goodbye (1001) instead of leaving the peer waiting.
    const stop = ctx.onCancel(() => {
      if (!ws.isClosed) void ws.close(1001, 'canceled');
    });
    try {
      return await runHandler(ws, handler);
    } finally {
      stop();
    }
  } finally {
    deflate?.cleanup();
    signal?.removeEventListener('abort', onAbort);
  }
}
