/**
 * HTTP/1 head parser benchmark: switchyard's {@link HeadParser} against Node's llhttp through
 * its JS binding (`process.binding('http_parser')`), the parser `node:http` itself runs.
 *
 * Run directly with `node --import tsx bench/codec.ts`, or call {@link runCodecBench} from the
 * bench runner. Each scenario is measured in alternating rounds (ours, llhttp, ours, ...) so
 * machine noise hits both sides alike, and the median of the rounds is reported.
 *
 * Fairness notes: both parsers are reused across messages the way a server reuses one per
 * connection (llhttp: `initialize()` then `execute()` per message; ours: `reset()` then
 * `execute()`). The llhttp callbacks do the minimum `node:http` does before building an
 * IncomingMessage (map the method index, keep url and the raw header array); ours produces a
 * `Headers` object with canonical names plus framing facts, so llhttp gets the lighter job.
 */
import { pathToFileURL } from 'node:url';
import { HeadParser } from '../kernel/http1/head-parser.js';

/** A typical browser navigation request head (Firefox-like), about 490 bytes. */
export const BROWSER_GET: Buffer = Buffer.from(
  [
    'GET /search?q=switchyard&lang=en HTTP/1.1',
    'Host: www.example.com',
    'User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
    'Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
    'Accept-Language: en-US,en;q=0.5',
    'Accept-Encoding: gzip, deflate, br, zstd',
    'Connection: keep-alive',
    'Cookie: session=abc123def456; theme=dark',
    'Upgrade-Insecure-Requests: 1',
    'Sec-Fetch-Dest: document',
    'Sec-Fetch-Mode: navigate',
    'Sec-Fetch-Site: none',
    'Sec-Fetch-User: ?1',
    '',
    '',
  ].join('\r\n'),
  'latin1',
);

/** A typical small API response head. */
export const API_RESPONSE: Buffer = Buffer.from(
  [
    'HTTP/1.1 200 OK',
    'Date: Tue, 01 Jul 2025 12:00:00 GMT',
    'Content-Type: application/json; charset=utf-8',
    'Content-Length: 1234',
    'Connection: keep-alive',
    'Cache-Control: no-cache',
    'Vary: Accept-Encoding',
    'Server: switchyard',
    '',
    '',
  ].join('\r\n'),
  'latin1',
);

/** One scenario's result (heads per second, medians of the rounds). */
export interface CodecBenchResult {
  /** Scenario name. */
  scenario: string;
  /** switchyard heads per second. */
  switchyard: number;
  /** llhttp (via Node's binding) heads per second, or NaN when the binding is unavailable. */
  llhttp: number;
  /** switchyard / llhttp. */
  ratio: number;
}

/** Options of {@link runCodecBench}. */
export interface CodecBenchOptions {
  /** Measured rounds per parser and scenario (median reported). Default 7. */
  rounds?: number;
  /** Target duration of one round in milliseconds. Default 300. */
  roundMs?: number;
  /** Print the table to stdout. Default true. */
  print?: boolean;
}

type Runner = (iterations: number) => void;

interface LlhttpBinding {
  HTTPParser: {
    new (): LlhttpParser;
    REQUEST: number;
    RESPONSE: number;
    kOnMessageBegin: number;
    kOnHeaders: number;
    kOnHeadersComplete: number;
    kOnBody: number;
    kOnMessageComplete: number;
    kOnExecute: number;
  };
  methods: string[];
}

interface LlhttpParser {
  [key: number]: unknown;
  initialize(type: number, resource: object, maxHeaderSize?: number, lenient?: number): void;
  execute(data: Buffer): number | Error;
  finish(): unknown;
}

function loadLlhttp(): LlhttpBinding | null {
  // process.binding is deprecated and warns once; silence just that warning.
  const emit = process.emitWarning;
  process.emitWarning = (() => undefined) as typeof process.emitWarning;
  try {
    const bind = (process as unknown as { binding(name: string): unknown }).binding;
    return bind('http_parser') as LlhttpBinding;
  } catch {
    return null;
  } finally {
    process.emitWarning = emit;
  }
}

/** Splits `buf` into pieces of `size` bytes (separate Buffers, as a socket would deliver). */
function split(buf: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length; i += size) out.push(Buffer.from(buf.subarray(i, Math.min(buf.length, i + size))));
  return out;
}

let sink = 0;

function oursRunner(kind: 'request' | 'response', pieces: Buffer[]): Runner {
  const parser = new HeadParser(kind);
  const n = pieces.length;
  return (iterations) => {
    for (let it = 0; it < iterations; it++) {
      parser.reset();
      for (let i = 0; i < n; i++) parser.execute(pieces[i]!);
      if (!parser.complete) throw new Error('switchyard parser did not complete the head');
      sink += parser.headers.size;
    }
  };
}

function llhttpRunner(binding: LlhttpBinding, kind: 'request' | 'response', pieces: Buffer[]): Runner {
  const { HTTPParser, methods } = binding;
  const parser = new HTTPParser();
  let completed = 0;
  let lastUrl = '';
  let lastMethod = '';
  let lastHeaders: string[] = [];
  // Callbacks as node's _http_common installs them (minus building IncomingMessage).
  parser[HTTPParser.kOnHeaders] = function onHeaders(headers: string[], url: string): void {
    lastHeaders = lastHeaders.concat(headers);
    lastUrl += url;
  };
  parser[HTTPParser.kOnHeadersComplete] = function onHeadersComplete(
    _major: number,
    _minor: number,
    headers: string[] | undefined,
    method: number | undefined,
    url: string | undefined,
    _status: number,
    _reason: string,
    _upgrade: boolean,
    _keepAlive: boolean,
  ): number {
    if (headers === undefined) headers = lastHeaders;
    if (url === undefined) url = lastUrl;
    lastMethod = method === undefined ? '' : methods[method]!;
    lastUrl = url;
    lastHeaders = headers;
    completed++;
    return 0;
  };
  parser[HTTPParser.kOnBody] = function onBody(): void {};
  parser[HTTPParser.kOnMessageComplete] = function onMessageComplete(): void {};
  parser[HTTPParser.kOnExecute] = null;
  const type = kind === 'request' ? HTTPParser.REQUEST : HTTPParser.RESPONSE;
  const resource = {};
  const n = pieces.length;
  return (iterations) => {
    const before = completed;
    for (let it = 0; it < iterations; it++) {
      parser.initialize(type, resource, 0, 0);
      lastHeaders = [];
      lastUrl = '';
      for (let i = 0; i < n; i++) {
        const r = parser.execute(pieces[i]!);
        if (r instanceof Error) throw r;
      }
    }
    if (completed - before !== iterations) throw new Error('llhttp did not complete every head');
    sink += lastHeaders.length + lastMethod.length;
  };
}

/** Calibrates an iteration count so one round takes about `ms`. */
function calibrate(run: Runner, ms: number): number {
  let n = 1000;
  for (;;) {
    const t0 = performance.now();
    run(n);
    const dt = performance.now() - t0;
    if (dt > 50) return Math.max(1000, Math.round((n * ms) / dt));
    n *= 4;
  }
}

function rate(run: Runner, iterations: number): number {
  const t0 = process.hrtime.bigint();
  run(iterations);
  const ns = Number(process.hrtime.bigint() - t0);
  return (iterations * 1e9) / ns;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return 'n/a';
  return n >= 1e6 ? `${(n / 1e6).toFixed(3)} M` : `${(n / 1e3).toFixed(1)} k`;
}

/**
 * Runs every scenario and returns (and by default prints) heads per second for switchyard and
 * llhttp with their ratio. Scenarios: the browser GET head whole and in 16-byte pieces, and a
 * response head whole.
 */
export async function runCodecBench(options: CodecBenchOptions = {}): Promise<CodecBenchResult[]> {
  const rounds = options.rounds ?? 7;
  const roundMs = options.roundMs ?? 300;
  const print = options.print ?? true;
  const binding = loadLlhttp();
  const scenarios: [string, 'request' | 'response', Buffer[]][] = [
    [`request head, whole (${BROWSER_GET.length} B)`, 'request', [BROWSER_GET]],
    ['request head, 16-byte chunks', 'request', split(BROWSER_GET, 16)],
    [`response head, whole (${API_RESPONSE.length} B)`, 'response', [API_RESPONSE]],
  ];
  const results: CodecBenchResult[] = [];
  for (const [name, kind, pieces] of scenarios) {
    const ours = oursRunner(kind, pieces);
    const theirs = binding ? llhttpRunner(binding, kind, pieces) : null;
    // Warm up both so each is optimized before measuring.
    const nOurs = calibrate(ours, roundMs);
    const nTheirs = theirs ? calibrate(theirs, roundMs) : 0;
    const a: number[] = [];
    const b: number[] = [];
    for (let r = 0; r < rounds; r++) {
      a.push(rate(ours, nOurs));
      if (theirs) b.push(rate(theirs, nTheirs));
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    const mine = median(a);
    const other = theirs ? median(b) : NaN;
    results.push({ scenario: name, switchyard: mine, llhttp: other, ratio: mine / other });
  }
  if (print) {
    const w = Math.max(...results.map((r) => r.scenario.length), 8);
    console.log(`HTTP/1 head parsing, heads/s (median of ${rounds} rounds, node ${process.version})`);
    console.log(`${'scenario'.padEnd(w)}  ${'switchyard'.padStart(12)}  ${'llhttp'.padStart(12)}  ${'ratio'.padStart(6)}`);
    for (const r of results) {
      console.log(`${r.scenario.padEnd(w)}  ${fmt(r.switchyard).padStart(12)}  ${fmt(r.llhttp).padStart(12)}  ${(Number.isFinite(r.ratio) ? `${r.ratio.toFixed(2)}x` : 'n/a').padStart(6)}`);
    }
    if (!binding) console.log('(llhttp binding unavailable in this Node build)');
  }
  if (sink === -1) console.log(sink);
  return results;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runCodecBench().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
