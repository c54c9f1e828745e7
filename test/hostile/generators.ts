/**
 * Generators of hostile HTTP/1 traffic shared by the hostile tests and `npm run fuzz`: a small
 * seeded PRNG, valid request heads, their mutations (byte flips, control and high bytes,
 * duplicated and removed lines, huge lines, CL/TE combinations, bad versions and methods,
 * obs-fold, bare LF), a reader that splits the server's answers into status codes, and a
 * batch runner that sends pipelined mutated heads over one socket. No test framework here:
 * the fuzz script runs them outside vitest.
 */
import net from 'node:net';

/** mulberry32: a tiny deterministic PRNG; the same seed gives the same traffic. */
export class Rng {
  private s: number;
  /** The seed this generator started from (print it in failures). */
  readonly seed: number;
  constructor(seed: number) {
    this.seed = seed >>> 0;
    this.s = this.seed;
  }
  /** A float in [0, 1). */
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  /** One element of `xs`. */
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** A seed from `FUZZ_SEED` when set, else a fresh one. */
export function seedFromEnv(): number {
  const s = process.env.FUZZ_SEED;
  return s !== undefined && s !== '' ? Number(s) >>> 0 : (Math.random() * 2 ** 32) >>> 0;
}

const METHODS = ['GET', 'GET', 'GET', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH'];
const PATHS = ['/', '/a', '/a/b?c=d', '/%2e%2e/x', '/x?y=%00', '*', 'http://x/abs', '/long/' + 'p'.repeat(40)];
const EXTRA = [
  'Accept: */*',
  'User-Agent: fuzz/1.0',
  'Accept-Encoding: gzip, br',
  'Cookie: a=b; c=d',
  'X-Forwarded-For: 1.2.3.4',
  'Cache-Control: no-cache',
  'Connection: keep-alive',
  'Expect: 100-continue',
  'Upgrade: websocket',
  'Range: bytes=0-1',
];

/** A valid request (head and, for a body method, its body) as latin1 text. */
export function validRequest(rng: Rng): string {
  const method = rng.pick(METHODS);
  const target = method === 'OPTIONS' && rng.chance(0.5) ? '*' : rng.pick(PATHS.filter((p) => p !== '*'));
  let head = `${method} ${target} HTTP/1.1\r\nHost: fuzz.test\r\n`;
  const n = rng.int(4);
  for (let i = 0; i < n; i++) head += `${rng.pick(EXTRA.filter((e) => !e.startsWith('Expect') && !e.startsWith('Upgrade')))}\r\n`;
  if (method === 'POST' || method === 'PUT' || method === 'PATCH') {
    const body = 'b'.repeat(rng.int(40));
    if (rng.chance(0.5)) return `${head}Content-Length: ${body.length}\r\n\r\n${body}`;
    return `${head}Transfer-Encoding: chunked\r\n\r\n${body.length === 0 ? '' : `${body.length.toString(16)}\r\n${body}\r\n`}0\r\n\r\n`;
  }
  return `${head}\r\n`;
}

const SPECIAL = [0x0d, 0x0a, 0x00, 0x7f, 0x80, 0xff, 0xc0, 0x20, 0x09, 0x3a, 0x0b, 0x0c, 0x22, 0x3b, 0x2c];
const BAD_VERSIONS = ['HTTP/1.2', 'HTTP/2.0', 'HTTP/0.9', 'HTTP/1.10', 'HTTP/1', 'http/1.1', 'HTTP/1.1 ', 'HTTP/11', 'HTTP/9.9', 'HTTP/1.01'];
const BAD_METHODS = ['G ET', 'GE\x00T', 'get', '', 'GET\t', '\x7fGET', 'PRI', 'CONNECT', 'TRACE', 'G\xe9T', 'GET/'];
const CL_TE = [
  'Content-Length: 5',
  'Content-Length: +5',
  'Content-Length: 0x5',
  'Content-Length: -1',
  'Content-Length: 005',
  'Content-Length: 99999999999999999999999',
  'Content-Length: 1, 1',
  'Content-Length: 1, 2',
  'Content-Length:',
  'Content-Length : 3',
  'Transfer-Encoding: chunked',
  'Transfer-Encoding: xchunked',
  'Transfer-Encoding: chunked\x0b',
  'Transfer-Encoding: chunked, identity',
  'Transfer-Encoding: gzip, chunked',
  'Transfer-Encoding : chunked',
  'Transfer-Encoding:\r\n chunked',
  'Transfer-Encoding: chunked;',
];

/** Byte positions of each line start of `s` (text before the final empty line). */
function lineStarts(s: string): number[] {
  const out = [0];
  for (let i = s.indexOf('\n'); i !== -1 && i + 1 < s.length; i = s.indexOf('\n', i + 1)) out.push(i + 1);
  return out;
}

/** One random mutation of a request text (head, and possibly the body after it). */
export function mutateOnce(rng: Rng, req: string): string {
  const headEnd = Math.max(1, req.indexOf('\r\n\r\n') === -1 ? req.length : req.indexOf('\r\n\r\n') + 2);
  const at = rng.int(headEnd);
  const lines = lineStarts(req.slice(0, headEnd));
  switch (rng.int(14)) {
    case 0: // byte flip
      return req.slice(0, at) + String.fromCharCode(rng.int(256)) + req.slice(at + 1);
    case 1: // insert a control, delimiter or high byte
      return req.slice(0, at) + String.fromCharCode(rng.pick(SPECIAL)) + req.slice(at);
    case 2: // delete a byte
      return req.slice(0, at) + req.slice(at + 1);
    case 3: {
      // duplicate a line
      const i = rng.int(lines.length);
      const a = lines[i]!;
      const b = lines[i + 1] ?? headEnd;
      return req.slice(0, b) + req.slice(a, b) + req.slice(b);
    }
    case 4: {
      // remove a line
      const i = rng.int(lines.length);
      const a = lines[i]!;
      const b = lines[i + 1] ?? headEnd;
      return req.slice(0, a) + req.slice(b);
    }
    case 5: {
      // a huge line (some over the line limit)
      const n = rng.pick([1000, 9000, 40_000, 70_000]);
      const i = 1 + rng.int(Math.max(1, lines.length - 1));
      const a = lines[Math.min(i, lines.length - 1)]!;
      return `${req.slice(0, a)}X-Big: ${'v'.repeat(n)}\r\n${req.slice(a)}`;
    }
    case 6: {
      // a framing header (CL/TE variants), possibly next to the one there
      const a = lines[Math.min(1, lines.length - 1)]!;
      return `${req.slice(0, a)}${rng.pick(CL_TE)}\r\n${req.slice(a)}`;
    }
    case 7: // bad version
      return req.replace('HTTP/1.1', rng.pick(BAD_VERSIONS));
    case 8: // bad method
      return rng.pick(BAD_METHODS) + req.slice(req.indexOf(' '));
    case 9: {
      // obs-fold: a line break and whitespace inside a field value
      const i = req.indexOf(': ', rng.int(headEnd));
      return i === -1 ? req : `${req.slice(0, i + 2)}a\r\n${rng.pick([' ', '\t'])}b${req.slice(i + 2)}`;
    }
    case 10: // bare LF line endings
      return rng.chance(0.5) ? req.slice(0, headEnd).replace(/\r\n/g, '\n') + req.slice(headEnd) : req.replace('\r\n', '\n');
    case 11: // bare CR
      return req.replace('\r\n', rng.chance(0.5) ? '\r' : '\r\r\n');
    case 12: // whitespace around a colon or the start line
      return req.replace(rng.pick([': ', ' /', 'Host:']), rng.pick([' : ', '  /', 'Host :', '\tHost:', ':  ']));
    default: // truncate the head (the next one follows it on the wire)
      return req.slice(0, at);
  }
}

const TCHAR = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const VCHAR = ' \t!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~\x80\xa0\xff0aZ';
const PCHAR = "abz09-._~!$&'()*+,;=:@/?%41";

function randomOf(rng: Rng, alphabet: string, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += alphabet[rng.int(alphabet.length)];
  return s;
}

/**
 * One mutation that keeps the request valid (odd but legal names, values, targets, OWS, case),
 * so a pipelined batch goes on to the heads after it.
 */
export function mutateMild(rng: Rng, req: string): string {
  const headEnd = req.indexOf('\r\n\r\n') + 2;
  const line1 = req.indexOf('\r\n') + 2;
  switch (rng.int(5)) {
    case 0: // a field with an unusual token name and a value with any allowed byte
      return `${req.slice(0, line1)}${randomOf(rng, TCHAR, 1 + rng.int(12))}:${randomOf(rng, VCHAR, rng.int(30)).trim()}\r\n${req.slice(line1)}`;
    case 1: // OWS around a value
      return req.slice(0, line1) + req.slice(line1, headEnd).replace(': ', rng.pick([':', ':\t', ':   ', ': \t '])) + req.slice(headEnd);
    case 2: // field name case
      return req.slice(0, line1) + req.slice(line1, headEnd).replace('Host', rng.pick(['HOST', 'host', 'hOsT'])) + req.slice(headEnd);
    case 3: {
      // odd but legal target bytes
      const sp = req.indexOf(' ');
      return `${req.slice(0, sp)} /${randomOf(rng, PCHAR, rng.int(20))}${req.slice(req.indexOf(' ', sp + 1))}`;
    }
    default: // HTTP/1.0 with keep-alive
      return req.replace('HTTP/1.1\r\n', 'HTTP/1.0\r\nConnection: keep-alive\r\n');
  }
}

/**
 * A request for a pipelined batch: mostly mutated in ways that keep it valid, sometimes 1 to 3
 * arbitrary mutations (which mostly end the connection), sometimes left as is.
 */
export function mutatedRequest(rng: Rng): { text: string; mutated: boolean } {
  let s = validRequest(rng);
  const r = rng.next();
  if (r < 0.25) {
    const n = 1 + rng.int(3);
    for (let i = 0; i < n; i++) s = mutateOnce(rng, s);
    return { text: s, mutated: true };
  }
  if (r < 0.85) {
    const n = 1 + rng.int(2);
    for (let i = 0; i < n; i++) s = mutateMild(rng, s);
    return { text: s, mutated: true };
  }
  return { text: s, mutated: false };
}

/** What the server answered on one connection. */
export interface Answer {
  /** Status codes of the final responses, in order (1xx interim responses are not listed). */
  statuses: number[];
  /** Bytes that are not a well-formed HTTP/1.1 response, with their offset; null when all parsed. */
  garbage: { offset: number; excerpt: string } | null;
}

/**
 * Splits what a server sent into responses: each must begin with an HTTP/1.1 status line and
 * carry a Content-Length (or be bodiless by its status or a HEAD request); anything else is
 * reported as garbage.
 */
export function parseAnswers(bytes: Buffer): Answer {
  const statuses: number[] = [];
  let at = 0;
  while (at < bytes.length) {
    const end = bytes.indexOf('\r\n\r\n', at, 'latin1');
    const head = bytes.toString('latin1', at, end === -1 ? Math.min(bytes.length, at + 200) : end);
    const m = /^HTTP\/1\.1 ([1-5]\d\d) [^\r\n]*\r?\n?/.exec(head);
    if (end === -1 || m === null) return { statuses, garbage: { offset: at, excerpt: JSON.stringify(head.slice(0, 120)) } };
    const status = Number(m[1]);
    const cl = /\r\ncontent-length: *(\d+)/i.exec(head);
    const te = /\r\ntransfer-encoding:/i.test(head);
    if (te) return { statuses, garbage: { offset: at, excerpt: 'chunked response (not expected from the fuzz handler)' } };
    at = end + 4;
    if (status >= 200 && status !== 204 && status !== 304) at += cl === null ? 0 : Number(cl[1]);
    if (status >= 200) statuses.push(status);
  }
  return { statuses, garbage: null };
}

/** Result of {@link sendBatch}. */
export interface BatchResult extends Answer {
  /** The connection did not close within the limit. */
  hung: boolean;
  /** A socket error (ECONNRESET after a refusal is normal). */
  error: string | null;
  /** Every byte received. */
  bytes: Buffer;
}

/**
 * Connects, writes `parts` (pipelined, each part a separate write, so the server also sees heads
 * cut at the part boundaries), half-closes, and collects the answer until the server closes.
 */
export function sendBatch(port: number, parts: readonly (string | Buffer)[], limitMs: number): Promise<BatchResult> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.setNoDelay(true);
    const chunks: Buffer[] = [];
    let error: string | null = null;
    let hung = false;
    const timer = setTimeout(() => {
      hung = true;
      socket.destroy();
    }, limitMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    socket.once('connect', () => {
      for (const p of parts) {
        if (socket.destroyed) break;
        if (typeof p === 'string') socket.write(p, 'latin1');
        else socket.write(p);
      }
      socket.end();
    });
    socket.once('close', () => {
      clearTimeout(timer);
      const bytes = Buffer.concat(chunks);
      resolve({ ...parseAnswers(bytes), hung, error, bytes });
    });
  });
}

/** Cuts `s` into 1 to `max` pieces at random points. */
export function splitRandom(rng: Rng, s: string, max: number): string[] {
  const n = 1 + rng.int(max);
  if (n === 1 || s.length < 2) return [s];
  const cuts = Array.from({ length: n - 1 }, () => 1 + rng.int(s.length - 1)).sort((a, b) => a - b);
  const out: string[] = [];
  let prev = 0;
  for (const c of cuts) {
    if (c > prev) out.push(s.slice(prev, c));
    prev = c;
  }
  out.push(s.slice(prev));
  return out;
}

/**
 * A pipelined batch of `n` requests, cut into pieces at random points; `mutated[i]` says whether
 * request i was mutated.
 */
export function mutatedBatch(rng: Rng, n: number): { parts: string[]; mutated: boolean[] } {
  let s = '';
  const mutated: boolean[] = [];
  for (let i = 0; i < n; i++) {
    const r = mutatedRequest(rng);
    s += r.text;
    mutated.push(r.mutated);
  }
  return { parts: splitRandom(rng, s, 4), mutated };
}

/**
 * How many of a batch's requests the server got to: each answered one, plus the one it stopped
 * at when it closed without answering all.
 */
export function reached(statuses: readonly number[], total: number): number {
  const last = statuses[statuses.length - 1];
  const stoppedAtUnanswered = statuses.length < total && (last === undefined || last < 400);
  return Math.min(total, statuses.length + (stoppedAtUnanswered ? 1 : 0));
}

/**
 * A socket that writes `text` one byte every `everyMs` (a slowloris client). Resolves `closed`
 * when the server closes it; `stop()` ends the drip.
 */
export function dripClient(port: number, text: string, everyMs: number): { closed: Promise<void>; isClosed: () => boolean; stop: () => void; socket: net.Socket } {
  const socket = net.connect({ host: '127.0.0.1', port });
  socket.setNoDelay(true);
  socket.on('error', () => {});
  socket.resume();
  let i = 0;
  let done = false;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= text.length) return;
    if (socket.connecting) return;
    socket.write(text[i++]!, 'latin1');
  }, everyMs);
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      done = true;
      clearInterval(timer);
      resolve();
    }),
  );
  return {
    closed,
    isClosed: () => done,
    stop: () => {
      clearInterval(timer);
      socket.destroy();
    },
    socket,
  };
}

/** The server the fuzz runs against (test and `npm run fuzz`): loopback, port 0, 2 s timers so a mutated head that stops short is reclaimed quickly. */
export const FUZZ_SERVER_OPTIONS = { host: '127.0.0.1', port: 0, readHeaderTimeout: 2000, readTimeout: 2000, idleTimeout: 2000 } as const;
