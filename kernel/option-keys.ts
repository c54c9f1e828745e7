/**
 * Unknown option names: every options object of the library refuses a key it does not know,
 * naming the key and the nearest valid one ("did you mean …?"), so a misspelt or foreign
 * option never passes in silence. One implementation for the kernel and every plugin.
 */
import { ArgumentError } from './errors.js';

/**
 * Names other HTTP libraries use for what an option of ours does: shown instead of (or besides)
 * the nearest spelling, since `timeout` is closer to no name of ours than to several. Only
 * the names the options object at hand knows are offered.
 */
const FOREIGN: Readonly<Record<string, readonly string[]>> = {
  timeout: ['requestTimeout', 'connectTimeout', 'readIdleTimeout', 'readTimeout', 'idleTimeout'],
  timeoutMs: ['requestTimeout', 'connectTimeout'],
  readTimeout: ['readIdleTimeout', 'responseHeaderTimeout'],
  followRedirects: ['redirect'],
  followRedirect: ['redirect'],
  follow: ['redirect', 'redirectLimit'],
  maxRedirects: ['redirectLimit'],
  maxRedirect: ['redirectLimit'],
  data: ['body', 'json'],
  form: ['body'],
  params: ['query', 'defaultQuery'],
  searchParams: ['query', 'defaultQuery'],
  qs: ['query', 'defaultQuery'],
  auth: ['basicauth', 'defaultBasicauth'],
  jar: ['cookiejar'],
  cookies: ['cookiejar'],
  maxRetries: ['retries'],
  retry: ['retries'],
  gzip: ['decompress'],
  compress: ['decompress'],
  decompression: ['decompress'],
  throwHttpErrors: ['statusException'],
  validateStatus: ['statusException'],
  rejectUnauthorized: ['tlsConfig', 'tls'],
  ca: ['tlsConfig', 'tls'],
  insecure: ['tlsConfig', 'tls'],
  tls: ['tlsConfig'],
  tlsConfig: ['tls'],
  agent: ['transport'],
  headers: ['defaultHeaders'],
  query: ['defaultQuery'],
  basicauth: ['defaultBasicauth'],
  maxPayload: ['maxMessageBytes', 'maxFrameBytes'],
  maxLength: ['maxLen'],
};

/** Longest edit distance still shown as a near miss of a name of `length` characters. */
function tolerance(length: number): number {
  return length <= 4 ? 1 : length <= 8 ? 2 : 3;
}

/**
 * Edit distance between two names, case-insensitive, counting a swap of two neighbouring
 * letters as one edit (a typo swaps letters: `requestTimoeut`). Names are short and this runs
 * only on errors.
 */
export function editDistance(a: string, b: string): number {
  a = a.toLowerCase();
  b = b.toLowerCase();
  // d[i][j]: the distance between a's first i letters and b's first j, row by row.
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, k) => k);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      row.push(d);
    }
    before = prev;
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * The valid names to suggest for an unknown `name`: what other libraries call it (when we know
 * it) among `known`, else the nearest spelling in `known` within a few edits; empty when
 * nothing is close.
 */
export function suggestOption(name: string, known: Iterable<string>): string[] {
  const all = [...known];
  const foreign = Object.hasOwn(FOREIGN, name) ? FOREIGN[name]!.filter((n) => all.includes(n)) : undefined;
  if (foreign !== undefined && foreign.length > 0) return foreign;
  let best: string[] = [];
  let bestD = tolerance(name.length) + 1;
  for (const k of all) {
    const d = editDistance(name, k);
    if (d < bestD) {
      bestD = d;
      best = [k];
    } else if (d === bestD && best.length > 0) best.push(k);
  }
  if (best.length === 0 && name.length >= 4) {
    // A name cut short (`maxIdle` for maxIdlePerHost/maxIdleTotal) is far in edits but plain to see.
    const lower = name.toLowerCase();
    best = all.filter((k) => k.toLowerCase().startsWith(lower));
  }
  return best.slice(0, 2);
}

/** ` (did you mean x?)` for an unknown option `name` among `known`, or '' when nothing is near. */
export function optionHint(name: string, known: Iterable<string>): string {
  return hint(suggestOption(name, known));
}

/** ` (did you mean x?)`, ` (did you mean x (or y/z)?)`, or '' when there is no suggestion. */
function hint(suggestions: readonly string[]): string {
  if (suggestions.length === 0) return '';
  const [first, ...rest] = suggestions;
  return ` (did you mean ${first}${rest.length > 0 ? ` (or ${rest.join('/')})` : ''}?)`;
}

/** A header name given where options go: a dash, or a capital first letter, is a header's habit, never an option's. */
export function looksLikeHeader(name: string): boolean {
  return name.includes('-') || /^[A-Z][a-z]/.test(name);
}

/**
 * The error for an unknown option `key` of the options object described by `where` (such as
 * `get()` or `new Client()`), with the nearest of `known`; `advice`, when given, is added when
 * nothing is near (say where such a value goes instead).
 */
export function unknownOptionError(where: string, key: string, known: Iterable<string>, advice?: string): ArgumentError {
  const s = suggestOption(key, known);
  let text = `${where}: unknown option ${JSON.stringify(key)}${hint(s)}`;
  if (s.length === 0 && advice !== undefined) text += `; ${advice}`;
  return new ArgumentError(text);
}

/**
 * Throws {@link unknownOptionError} for the first own key of `options` that is not in `known`.
 * Cheap when every key is known: one set lookup per key given.
 */
export function checkOptionKeys(options: object, known: ReadonlySet<string>, where: string | (() => string), headersHint?: string): void {
  for (const key in options) {
    if (!known.has(key) && Object.prototype.hasOwnProperty.call(options, key)) {
      throw unknownOptionError(typeof where === 'string' ? where : where(), key, known, headersHint !== undefined && looksLikeHeader(key) ? headersHint : undefined);
    }
  }
}
