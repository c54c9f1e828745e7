/**
 * HTTP2Settings: the flow-control windows of HTTP/2 connections (the reference's
 * `HTTP2Settings`), passed as `http2Settings` to `Client`, `serve` and `listen`; and the
 * server's HTTP/2 options resolved once per listener.
 */
import { ArgumentError, type ServerInfo } from '../../kernel/index.js';
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
    for (const k of Object.keys(init)) {
      if (k !== 'initialWindowSize' && k !== 'connectionWindowSize') throw new ArgumentError(`unknown HTTP2Settings option ${JSON.stringify(k)}`);
    }
    this.initialWindowSize = bounded(init.initialWindowSize, 'initialWindowSize', 1);
    this.connectionWindowSize = bounded(init.connectionWindowSize, 'connectionWindowSize', DEFAULT_WINDOW);
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

function bounded(v: unknown, name: string, min: number): number {
  if (v === undefined) return DEFAULT_WINDOW;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > MAX_WINDOW) {
    throw new ArgumentError(`HTTP2Settings ${name} must be an integer from ${min} to ${MAX_WINDOW}, got ${typeof v === 'number' ? v : typeof v}`);
  }
  return v;
}

const DEFAULT_SETTINGS = new HTTP2Settings();

/** The HTTP/2 options of one server, resolved once. */
export interface H2ServerConfig {
  readonly settings: HTTP2Settings;
  /** Open streams allowed per connection; 0 means no limit. */
  readonly maxConcurrentStreams: number;
  readonly limits: ServerLimits;
}

/** Reads `http2Settings` and `maxConcurrentStreams` from the server's options (throws `ArgumentError` when invalid). */
export function serverConfig(info: ServerInfo, limits: ServerLimits): H2ServerConfig {
  const o = info.options;
  const settings = HTTP2Settings.from(o.http2Settings);
  const m = o.maxConcurrentStreams;
  let maxConcurrentStreams = DEFAULT_MAX_CONCURRENT_STREAMS;
  if (m !== undefined) {
    if (typeof m !== 'number' || !Number.isInteger(m) || m < 0 || m > 2 ** 32 - 1) {
      throw new ArgumentError(`maxConcurrentStreams must be an integer >= 0 (0 = no limit), got ${typeof m === 'number' ? m : typeof m}`);
    }
    maxConcurrentStreams = m;
  }
  return { settings, maxConcurrentStreams, limits };
}
