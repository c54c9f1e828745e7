/**
 * Loggers for the access log: the pino-compatible shape the middleware writes to, and a
 * small default logger that writes one JSON line per record to stderr (pino's line format:
 * `level` as a number, `time` in epoch ms, `pid`, `hostname`, the record's fields, `msg`),
 * or a readable line with `format: 'pretty'`.
 */
import process from 'node:process';
import { hostname } from 'node:os';
import { ArgumentError } from '../../kernel/index.js';

/** Log levels, as pino names them. */
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/** pino's numeric values of the levels. */
export const LOG_LEVELS: Readonly<Record<LogLevel, number>> = Object.freeze({ trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 });

/** One log method: pino's `logger.info(obj, msg)`. */
export type LogFn = (obj: object, msg?: string) => void;

/** A pino-compatible logger (pino itself, or anything with these methods). */
export interface Logger {
  /** Info-level record. */
  info: LogFn;
  /** Warn-level record. */
  warn: LogFn;
  /** Error-level record. */
  error: LogFn;
  /** Debug-level record. */
  debug: LogFn;
  /** Trace-level record (optional; `debug` is used when absent). */
  trace?: LogFn;
  /** Fatal-level record (optional; `error` is used when absent). */
  fatal?: LogFn;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Records below this level are dropped. Default `info`. */
  level?: LogLevel;
  /** `json` (default): pino's JSON lines; `pretty`: `time LEVEL (group): msg key=value …`. */
  format?: 'json' | 'pretty';
  /** Where lines go; default `process.stderr`. */
  destination?: { write(line: string): unknown };
}

/** True for a known level name. */
export function isLogLevel(x: unknown): x is LogLevel {
  return typeof x === 'string' && Object.hasOwn(LOG_LEVELS, x);
}

/** Makes a logger writing JSON lines (or readable lines) to stderr or `destination`. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  if (!isLogLevel(level)) throw new ArgumentError(`logger level must be one of ${Object.keys(LOG_LEVELS).join(', ')}, got ${String(level)}`);
  const format = options.format ?? 'json';
  if (format !== 'json' && format !== 'pretty') throw new ArgumentError(`logger format must be "json" or "pretty", got ${String(format)}`);
  const dest = options.destination ?? process.stderr;
  if (typeof dest?.write !== 'function') throw new ArgumentError('logger destination must have a write(line) method');
  const min = LOG_LEVELS[level];
  const base = `"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`;
  const method = (name: LogLevel): LogFn => {
    const n = LOG_LEVELS[name];
    if (n < min) return () => {};
    return (obj, msg) => {
      dest.write(format === 'json' ? jsonLine(n, base, obj, msg) : prettyLine(name, obj, msg));
    };
  };
  return { trace: method('trace'), debug: method('debug'), info: method('info'), warn: method('warn'), error: method('error'), fatal: method('fatal') };
}

let current: Logger | null = null;

/** The logger the middleware uses when given none: set with {@link setDefaultLogger}, else JSON lines on stderr. */
export function getDefaultLogger(): Logger {
  return (current ??= createLogger());
}

/** Replaces the default logger (the reference's "current logger"); null restores the built-in one. */
export function setDefaultLogger(logger: Logger | null): void {
  if (logger !== null) checkLogger(logger, 'setDefaultLogger');
  current = logger;
}

/** @internal Throws ArgumentError unless `logger` has the methods the middleware calls. */
export function checkLogger(logger: unknown, where: string): asserts logger is Logger {
  const l = logger as Partial<Logger> | null;
  if (typeof l !== 'object' && typeof l !== 'function') throw new ArgumentError(`${where}: logger must be a pino-compatible object, got ${typeof logger}`);
  for (const m of ['info', 'warn', 'error', 'debug'] as const) {
    if (typeof l?.[m] !== 'function') throw new ArgumentError(`${where}: logger must be pino-compatible; it has no ${m}(obj, msg) method`);
  }
}

/** Writes one record at `level` (trace and fatal fall back to debug and error when the logger lacks them). */
export function logAt(logger: Logger, level: LogLevel, obj: object, msg: string): void {
  switch (level) {
    case 'trace':
      return logger.trace ? logger.trace(obj, msg) : logger.debug(obj, msg);
    case 'fatal':
      return logger.fatal ? logger.fatal(obj, msg) : logger.error(obj, msg);
    default:
      return logger[level](obj, msg);
  }
}

function jsonLine(level: number, base: string, obj: object, msg: string | undefined): string {
  let fields: string;
  try {
    fields = JSON.stringify(obj, replacer);
  } catch {
    fields = JSON.stringify({ unserializable: String(obj) });
  }
  const inner = fields.length > 2 ? ',' + fields.slice(1, -1) : '';
  return `{"level":${level},"time":${Date.now()},${base}${inner}${msg === undefined ? '' : `,"msg":${JSON.stringify(msg)}`}}\n`;
}

function prettyLine(level: LogLevel, obj: object, msg: string | undefined): string {
  const rec = obj as Record<string, unknown>;
  const group = typeof rec.group === 'string' ? ` (${rec.group})` : '';
  let line = `${new Date().toISOString()} ${level.toUpperCase()}${group}: ${msg ?? ''}`;
  let stack = '';
  for (const [k, v] of Object.entries(rec)) {
    if (k === 'group' || v === undefined) continue;
    if (v instanceof Error) {
      stack = '\n    ' + (v.stack ?? String(v)).replace(/\n/g, '\n    ');
      continue;
    }
    line += ` ${k}=${typeof v === 'string' ? v : JSON.stringify(v, replacer)}`;
  }
  return line + stack + '\n';
}

/** pino's `err` serializer: an Error becomes `{ type, message, stack, … }`; bigints become strings. */
function replacer(_key: string, v: unknown): unknown {
  if (v instanceof Error) {
    const out: Record<string, unknown> = { type: v.constructor?.name ?? 'Error', message: v.message, stack: v.stack };
    for (const [k, x] of Object.entries(v)) if (!(k in out)) out[k] = x;
    if (v.cause !== undefined) out.cause = v.cause;
    return out;
  }
  return typeof v === 'bigint' ? v.toString() : v;
}
