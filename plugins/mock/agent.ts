/**
 * MockAgent: the interceptors of a test, the `mock` plugin that answers a kernel's requests
 * from them, and record/replay.
 *
 * Per connection, the plugin's `client.connect` tap decides: an origin with interceptors, or
 * one the network is not allowed for, gets an in-memory connection whose session answers
 * each request from the interceptors (see session.ts); an origin the network is allowed for
 * and that has no interceptors is left to the next tap (a proxy) or the kernel's own connect.
 */
import {
  ArgumentError,
  checkOptionKeys,
  Client,
  createKernel,
  definePlugin,
  Stage,
  type ClientOptions,
  type ConnectOptions,
  type Kernel,
  type Plugin,
  type PluginList,
  type Response,
} from '../../kernel/index.js';
import { MockNotMatchedError, MockPendingError } from './errors.js';
import { Interceptor, MockInterceptor, originOf, type MockInterceptOptions, type MockInterceptorInfo, type MockRequest } from './interceptor.js';
import { decodeBody, loadRecording, Recorder } from './record.js';
import { MockSession, MockSocket, type MockAnswerer } from './session.js';

/** Options of {@link mock}. */
export interface MockOptions {
  /**
   * Origins whose requests may use the network when they have no interceptor (`true`: every
   * origin). Default: none, so a request no interceptor answers fails with `MockNotMatchedError`.
   */
  allowNetwork?: boolean | readonly (string | URL)[];
  /** Record: requests use the network, and each exchange is written to this JSON file on `save()` or when the kernel closes. */
  record?: string;
  /** Replay: answer requests from this recording (see docs/mock.md for the matching rules); others fail with `MockNotMatchedError`. */
  replay?: string;
}

const OPTION_KEYS: ReadonlySet<string> = new Set(['allowNetwork', 'record', 'replay']);
const NAME = 'mock';

let defaultPlugins: (() => PluginList) | null = null;

/** @internal The plugins {@link MockAgent.client} stacks under the mock (the default preset, set by `switchyard/plugins`). */
export function setDefaultMockPlugins(get: () => PluginList): void {
  defaultPlugins = get;
}

/**
 * The interceptors of a test and the `mock` plugin that answers from them. Register
 * {@link MockAgent.plugin} on a kernel, or take {@link MockAgent.client} (the default stack
 * with this plugin) and pass it to the top-level helpers as `{ client }`.
 */
export class MockAgent {
  /** The plugin to register (`createKernel().register([...presets.defaults, mocks.plugin])`). */
  readonly plugin: Plugin<Record<string, never>>;
  private readonly interceptors: Interceptor[] = [];
  private readonly allowAll: boolean;
  private readonly allowed: ReadonlySet<string>;
  private readonly recorder: Recorder | null;
  private readonly mockedResponses = new WeakSet<Response>();
  private kernel: Kernel | null = null;
  private defaultClient: Client | null = null;

  constructor(options: MockOptions = {}) {
    if (typeof options !== 'object' || options === null) throw new ArgumentError('mock(options): options must be an object');
    checkOptionKeys(options, OPTION_KEYS, 'mock()');
    const { allowNetwork = false, record, replay } = options;
    if (record !== undefined && replay !== undefined) throw new ArgumentError('mock(): give record or replay, not both');
    for (const [k, v] of [
      ['record', record],
      ['replay', replay],
    ] as const) {
      if (v !== undefined && (typeof v !== 'string' || v === '')) throw new ArgumentError(`mock(): ${k} must be a file path`);
    }
    if (typeof allowNetwork !== 'boolean' && !Array.isArray(allowNetwork)) throw new ArgumentError('mock(): allowNetwork must be true, false or a list of origins');
    this.allowAll = allowNetwork === true || record !== undefined;
    this.allowed = new Set(Array.isArray(allowNetwork) ? allowNetwork.map((o: string | URL, i: number) => originOf(o, `mock(): allowNetwork[${i}]`)) : []);
    this.recorder = record !== undefined ? new Recorder(record) : null;
    if (replay !== undefined) this.loadReplay(replay);
    this.plugin = definePlugin({
      name: NAME,
      register: (kernel) => this.install(kernel),
    });
  }

  /** Declares an interceptor; give it its answer with `.reply(…)` or `.replyWithError(…)`. */
  intercept(options: MockInterceptOptions): MockInterceptor {
    const i = new Interceptor(options);
    return new MockInterceptor(i, (x) => this.interceptors.push(x));
  }

  /** Interceptors never used, or (unless persisted) not used up, in the order declared. */
  pending(): MockInterceptorInfo[] {
    return this.interceptors.filter((i) => i.pending).map(info);
  }

  /** Throws `MockPendingError` listing the {@link MockAgent.pending} interceptors, if any. */
  assertNoPending(): void {
    const p = this.pending();
    if (p.length > 0) throw new MockPendingError(p.map((i) => i.description));
  }

  /** Forgets every interceptor (replayed ones included). */
  clear(): void {
    this.interceptors.length = 0;
  }

  /** Record mode: writes the exchanges so far to the file (also done when the kernel closes). Other modes: nothing. */
  async save(): Promise<void> {
    await this.recorder?.save();
  }

  /**
   * A client on a kernel of the default plugins with this one, made on first use and closed by
   * {@link MockAgent.close}: `HTTP.get(url, { client: mocks.client() })`. `options` are the
   * client's, given when it is made (later calls pass none).
   */
  client(options: Omit<ClientOptions, 'kernel'> = {}): Client {
    if (this.defaultClient !== null && this.defaultClient.isOpen) {
      if (Object.keys(options).length > 0)
        throw new ArgumentError(
          'mocks.client(options): the client exists already, with the options it was made with; call mocks.close() first, or make another with kernel.client(options) on a kernel of your own',
        );
      return this.defaultClient;
    }
    if (this.kernel === null) {
      if (defaultPlugins === null) throw new ArgumentError('mocks.client() needs the default plugins: import switchyard or switchyard/plugins, or register mocks.plugin on a kernel of your own');
      this.kernel = createKernel().register([...defaultPlugins(), this.plugin]);
    }
    return (this.defaultClient = this.kernel.client(options));
  }

  /** Closes the kernel {@link MockAgent.client} made (saving a recording). */
  async close(): Promise<void> {
    const k = this.kernel;
    this.kernel = null;
    this.defaultClient = null;
    if (k !== null) await k.close();
  }

  private install(kernel: Kernel): void {
    const answerer: MockAnswerer = {
      take: (req) => this.take(req),
      mocked: (res) => this.mockedResponses.add(res),
      answers: (origin) => this.answers(origin),
    };
    kernel.hooks.client.connect.tap({ name: NAME, stage: Stage.FIRST }, (o: ConnectOptions) => {
      const origin = connectOrigin(o);
      return this.answers(origin) ? new MockSocket(origin, o.protocol === 'https:') : undefined;
    });
    kernel.hooks.client.session.tap({ name: NAME, stage: Stage.FIRST }, (socket, info) => {
      if (!(socket instanceof MockSocket)) return undefined;
      return new MockSession(socket, info.pool, answerer, info.connect.httpVersion === 'h2');
    });
    const recorder = this.recorder;
    if (recorder !== null) {
      // First of all: the bytes as the server sent them, before decompression replaces the body.
      kernel.hooks.client.onResponseHead.tap({ name: NAME, stage: Stage.FIRST }, (res) => {
        if (!this.mockedResponses.has(res)) recorder.tee(res);
      });
      kernel.onClose(() => recorder.save());
    }
  }

  /** Whether requests to `origin` are the mock's: it has interceptors, or the network is not allowed for it. */
  private answers(origin: string): boolean {
    for (const i of this.interceptors) if (i.origin === origin) return true;
    return !(this.allowAll || this.allowed.has(origin));
  }

  /** The first interceptor with uses left that matches `req`, counted; else `MockNotMatchedError`. */
  private take(req: MockRequest): Interceptor {
    let best: Interceptor | null = null;
    let bestWhy = '';
    let bestScore = -1;
    for (const i of this.interceptors) {
      const { why, score } = i.mismatch(req);
      if (why === '' && i.remaining > 0) {
        i.calls++;
        return i;
      }
      if (score > bestScore) {
        best = i;
        bestScore = score;
        bestWhy = why === '' ? `used up: it answered ${i.calls} time${i.calls === 1 ? '' : 's'}; add .times(n) or .persist()` : why;
      }
    }
    throw new MockNotMatchedError(req.method, req.url, best === null ? null : best.describe(), bestWhy);
  }

  /** Adds the exchanges of a recording as interceptors: each answers once, in order; the last of a request persists. */
  private loadReplay(file: string): void {
    const rec = loadRecording(file);
    const last = new Map<string, Interceptor>();
    for (const e of rec.exchanges) {
      const u = new URL(e.url);
      const body = e.requestBody === undefined ? undefined : e.requestBody.encoding === 'utf8' ? e.requestBody.data : new Uint8Array(decodeBody(e.requestBody));
      const i = new Interceptor({ origin: u.origin, method: e.method, path: u.pathname + u.search, ...(body !== undefined ? { body } : {}) });
      i.answer = { kind: 'reply', data: { status: e.status, body: decodeBody(e.body), headers: e.headers, ...(e.trailers !== undefined ? { trailers: e.trailers } : {}) } };
      this.interceptors.push(i);
      last.set(`${e.method} ${e.url} ${e.requestBody?.data ?? ''}`, i);
    }
    for (const i of last.values()) i.persist = true;
  }
}

function info(i: Interceptor): MockInterceptorInfo {
  const remaining = i.remaining;
  return {
    description: `${i.describe()} (answered ${i.calls} time${i.calls === 1 ? '' : 's'}${i.persist ? ', persisted' : `, ${remaining} left`})`,
    origin: i.origin,
    method: i.method,
    calls: i.calls,
    remaining,
    persist: i.persist,
  };
}

/** The origin of a connection, spelt as `URL.origin` spells it. */
function connectOrigin(o: ConnectOptions): string {
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  return new URL(`${o.protocol}//${host}:${o.port}`).origin;
}

/**
 * A {@link MockAgent}: interceptors for client tests, through the `mock` plugin.
 *
 * @example
 * ```ts
 * const mocks = HTTP.mock();
 * mocks.intercept({ origin: 'https://api.example.com', path: '/users/1' }).reply(200, { id: 1 });
 * const res = await HTTP.get('https://api.example.com/users/1', { client: mocks.client() });
 * mocks.assertNoPending();
 * await mocks.close();
 * ```
 */
export function mock(options: MockOptions = {}): MockAgent {
  return new MockAgent(options);
}
