/**
 * A switchyard server that plays scripted exchanges, the way the HTTP caching test suite's
 * server does: a case is a list of steps; the client sends each step's request with a
 * `Step` header naming its number; the server answers with that step's scripted response and
 * records which steps reached it. A step the cache answered never reaches it. A step expected
 * to be revalidated gets 304 when the request carries the previous step's validator, and 599
 * otherwise so the check fails. Dates in scripted fields are seconds relative to the (fake)
 * clock at the time the response is made.
 */
import { Response, type Request } from '../../../kernel/index.js';
import { startServer } from '../../helpers/server.js';

/** What a step's exchange should be, seen from the server. */
export type Expect =
  /** The cache answered: the server never saw the step. */
  | 'cached'
  /** The server answered in full. */
  | 'not_cached'
  /** The server saw a conditional request carrying the previous step's validator and answered 304. */
  | 'validated';

/** A header value: a string, or a number of seconds from now for a date field. */
export type ScriptedValue = string | number;

/** One step of a case. */
export interface Step {
  /** Request method; default GET. */
  method?: string;
  /** Request header fields. */
  request?: readonly (readonly [string, string])[];
  /** Response status; default 200. */
  status?: number;
  /** Response header fields; a number makes an HTTP date that many seconds from now. */
  response?: readonly (readonly [string, ScriptedValue])[];
  /** Response body; default a body naming the step. */
  body?: string;
  /** Seconds the clock moves on after this step (the suite's pause). */
  pause?: number;
  /** What should happen; unset for a setup step whose fate is not checked. */
  expect?: Expect;
  /** The status the caller should see, when it matters. */
  expectStatus?: number;
  /** Header fields the caller should see (name, exact value), when it matters. */
  expectHeaders?: readonly (readonly [string, string | null])[];
  /** The response goes to another path of the case (`Location`, `Content-Location` targets). */
  path?: string;
}

/** One exchange as the server saw it. */
export interface Seen {
  step: number;
  method: string;
  path: string;
  headers: Request['headers'];
}

/** The scripted server: `script(id, steps)` installs a case under `/id/`; `seen(id)` lists what reached it. */
export interface ScriptedServer {
  readonly base: string;
  script(id: string, steps: readonly Step[]): void;
  seen(id: string): Seen[];
}

function httpDate(secondsFromNow: number): string {
  return new Date(Math.round(Date.now() / 1000 + secondsFromNow) * 1000).toUTCString();
}

function value(name: string, v: ScriptedValue): string {
  if (typeof v === 'string') return v;
  // Age and the like stay numbers; only date fields take a relative time.
  return /^(date|expires|last-modified)$/i.test(name) ? httpDate(v) : String(v);
}

/** The header a step's scripted response gets for field `name` (the first one), as sent. */
export function scriptedField(step: Step, name: string): string | undefined {
  const f = step.response?.find(([k]) => k.toLowerCase() === name.toLowerCase());
  return f === undefined ? undefined : value(f[0], f[1]);
}

/** Starts the server (closed after the test). */
export async function startScriptedServer(): Promise<ScriptedServer> {
  const cases = new Map<string, { steps: readonly Step[]; seen: Seen[]; sent: Map<number, Map<string, string>> }>();
  const { port } = await startServer((req) => {
    const url = new URL(req.target, 'http://x');
    const id = url.pathname.split('/')[1] ?? '';
    const c = cases.get(id);
    const n = Number(req.headers.get('Step') ?? NaN);
    const step = c?.steps[n - 1];
    if (c === undefined || step === undefined) return new Response(500, `no step ${String(n)} for ${url.pathname}`);
    c.seen.push({ step: n, method: req.method, path: url.pathname, headers: req.headers });
    let status = step.status ?? 200;
    if (step.expect === 'validated') {
      const prev = c.sent.get(n - 1);
      const etag = prev?.get('etag');
      const lm = prev?.get('last-modified');
      const inm = req.headers.get('If-None-Match');
      const ims = req.headers.get('If-Modified-Since');
      status = (etag !== undefined && inm === etag) || (lm !== undefined && ims === lm) ? 304 : 599;
    }
    const fields: [string, string][] = (step.response ?? []).map(([k, v]) => [k, value(k, v)]);
    c.sent.set(n, new Map(fields.map(([k, v]) => [k.toLowerCase(), v])));
    if (!fields.some(([k]) => k.toLowerCase() === 'content-type')) fields.push(['Content-Type', 'text/plain']);
    fields.push(['Server-Step', String(n)]);
    const body = status === 304 || status === 204 || req.method === 'HEAD' ? null : (step.body ?? `body of step ${n}`);
    return new Response(status, body, { headers: fields });
  });
  const base = `http://127.0.0.1:${port}`;
  return {
    base,
    script: (id, steps) => cases.set(id, { steps, seen: [], sent: new Map() }),
    seen: (id) => cases.get(id)?.seen ?? [],
  };
}
