/**
 * HTTP2Settings: the flow-control windows of HTTP/2 connections (the reference's
 * `HTTP2Settings`), passed as `http2Settings` to `Client`, `serve` and `listen`; and the
 * server's HTTP/2 options resolved once per listener.
 */
import { ArgumentError, type OptionCheck, type ServerInfo } from '../../kernel/index.js';
import type { ServerLimits } from '../../kernel/protocol.js';

/** The largest window HTTP/2 allows (RFC 9113 §6.9.1). */
export const MAX_WINDOW = 2 ** 31 - 1;
/** The window every HTTP/2 stream and connection starts with. */
export const DEFAULT_WINDOW = 65535;
/** Default of `maxConcurrentStreams` on a server. */
export const DEFAULT_MAX_CONCURRENT_STREAMS = 100;

/** What `new HTTP2Settings()` takes. */
export interface HTTP2SettingsInit {
  /** Flow-control window of each stream (SETTINGS_INITIAL_WINDOW_SIZE), 1 to 2^31-1. Default 65535. */
  initialWindowSize?: number;
  /** Flow-control window of the whole connection, 65535 to 2^31-1. Default 65535. */
  connectionWindowSize?: number;
}

/**
 * HTTP/2 flow-control settings. One stream's throughput is at most about its window divided
 * by the round-trip time, so raise `initialWindowSize` for large downloads over long paths.
 */
export class HTTP2Settings {
  /** Flow-control window of each stream, in bytes. */
  readonly initialWindowSize: number;
  /** Flow-control window of the connection, in bytes. */
  readonly connectionWindowSize: number;

  /** Checks the bounds: out of range (or not an integer) throws `ArgumentError`. */
  constructor(init: HTTP2SettingsInit = {}) {
    if (typeof init !== 'object' || init === null) throw new ArgumentError('HTTP2Settings(options) takes an object: { initialWindowSize, connectionWindowSize }');
    const unknown = unknownKey(init);
    if (unknown !== undefined) throw new ArgumentError(`unknown HTTP2Settings option ${JSON.stringify(unknown)}`);
    for (const k of WINDOWS) {
      const expected = windowProblem(init[k], k);
      if (expected !== null) throw new ArgumentError(`HTTP2Settings ${k} must be ${expected}, got ${describeNumber(init[k])}`);
    }
    this.initialWindowSize = init.initialWindowSize ?? DEFAULT_WINDOW;
    this.connectionWindowSize = init.connectionWindowSize ?? DEFAULT_WINDOW;
    Object.freeze(this);
  }

  /** An `HTTP2Settings` as it is, a plain object checked into one, `undefined` the defaults. */
  static from(value: unknown, where = 'http2Settings'): HTTP2Settings {
    if (value instanceof HTTP2Settings) return value;
    if (value === undefined || value === null) return DEFAULT_SETTINGS;
    if (typeof value !== 'object') throw new ArgumentError(`${where} must be an HTTP2Settings or { initialWindowSize, connectionWindowSize }, got ${typeof value}`);
    return new HTTP2Settings(value as HTTP2SettingsInit);
  }
}

/** The windows an `HTTP2Settings` sets, and the least each may be (RFC 9113 §6.9.1, §6.9.2). */
const WINDOWS = ['initialWindowSize', 'connectionWindowSize'] as const;
const WINDOW_MIN: Readonly<Record<(typeof WINDOWS)[number], number>> = { initialWindowSize: 1, connectionWindowSize: DEFAULT_WINDOW };

function unknownKey(init: object): string | undefined {
  return Object.keys(init).find((k) => !(WINDOWS as readonly string[]).includes(k));
}

/** null when `v` is a valid value of window `name` (or unset), else what it must be. */
function windowProblem(v: unknown, name: (typeof WINDOWS)[number]): string | null {
  if (v === undefined || (typeof v === 'number' && Number.isInteger(v) && v >= WINDOW_MIN[name] && v <= MAX_WINDOW)) return null;
  return `an integer from ${WINDOW_MIN[name]} to ${MAX_WINDOW}`;
}

function describeNumber(v: unknown): string {
  return typeof v === 'number' ? String(v) : typeof v;
}

const SETTINGS_SHAPE = 'an HTTP2Settings or { initialWindowSize, connectionWindowSize }';
/** Most streams a SETTINGS_MAX_CONCURRENT_STREAMS can allow (a 32-bit value). */
const MAX_STREAMS_LIMIT = 2 ** 32 - 1;

/**
 * The h2 plugin's server options and their checks (`definePlugin({ serverOptions })`): a bad
 * value fails `serve`/`listen` when the server is made, not every HTTP/2 connection later.
 */
export const SERVER_OPTION_CHECKS = {
  http2Settings: (v: unknown): string | null => {
    if (v === null || v instanceof HTTP2Settings) return null;
    if (typeof v !== 'object' || Array.isArray(v)) return SETTINGS_SHAPE;
    const unknown = unknownKey(v);
    if (unknown !== undefined) return `${SETTINGS_SHAPE}, without ${unknown}`;
    for (const k of WINDOWS) {
      const expected = windowProblem((v as HTTP2SettingsInit)[k], k);
      if (expected !== null) return `${SETTINGS_SHAPE} whose ${k} is ${expected}`;
    }
    return null;
  },
  maxConcurrentStreams: (v: unknown): string | null =>
    typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_STREAMS_LIMIT ? null : `an integer from 0 to ${MAX_STREAMS_LIMIT} (0 = no limit)`,
} satisfies Record<keyof H2ServerOptions, OptionCheck>;

/** Server options of the h2 plugin (`serve`, `listen`), joined to `ServerOptions` by declaration merging. */
export interface H2ServerOptions {
  /** Flow-control windows of the server's HTTP/2 connections: an `HTTP2Settings` or `{ initialWindowSize, connectionWindowSize }`. */
  http2Settings?: HTTP2Settings | HTTP2SettingsInit | null;
  /** Open HTTP/2 streams per connection. Default 100; 0 = no limit. */
  maxConcurrentStreams?: number;
}

const DEFAULT_SETTINGS = new HTTP2Settings();

/** The HTTP/2 options of one server, resolved once. */
export interface H2ServerConfig {
  readonly settings: HTTP2Settings;
  /** Open streams allowed per connection; 0 means no limit. */
  readonly maxConcurrentStreams: number;
  readonly limits: ServerLimits;
}

/**
 * Reads `http2Settings` and `maxConcurrentStreams` from the server's options, which the server
 * checked when it was made (`SERVER_OPTION_CHECKS`); checked again here for a server info made
 * by hand (throws `ArgumentError` when invalid).
 */
export function serverConfig(info: ServerInfo, limits: ServerLimits): H2ServerConfig {
  const o = info.options as H2ServerOptions;
  const settings = HTTP2Settings.from(o.http2Settings);
  const m = o.maxConcurrentStreams;
  if (m !== undefined) {
    const expected = SERVER_OPTION_CHECKS.maxConcurrentStreams(m);
    if (expected !== null) throw new ArgumentError(`maxConcurrentStreams must be ${expected}, got ${describeNumber(m)}`);
  }
  return { settings, maxConcurrentStreams: m ?? DEFAULT_MAX_CONCURRENT_STREAMS, limits };
}
