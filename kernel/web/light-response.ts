/**
 * A light global `Response` for fetch-style servers. Node's `Response` constructor builds a
 * `ReadableStream` and a `Headers` for every response, which costs more than serving the
 * request does; a fetch-style app (`c.text('hi')`) makes one per request and the server then
 * only needs its status, headers and string. {@link installLightResponse} puts a class in
 * `globalThis.Response` that keeps what it was given and makes the platform's response only
 * when something asks for more (its body stream, `clone()`, `text()`, …), which then answers
 * for it. Instances are `instanceof Response` both ways (the platform's responses are
 * instances of the light class, light ones of the platform's), and the statics (`json`,
 * `redirect`, `error`) are the platform's.
 *
 * Nothing here touches the platform's `Response` before it is asked for: Node loads its fetch
 * implementation on first access, which would cost every program that imports switchyard.
 *
 * Only a string, bytes or empty body is kept light; any other (a stream, a Blob, FormData,
 * URLSearchParams) makes the platform's response at once. Arguments are checked when the
 * platform's response is made, except the status range, checked at once as the platform does.
 */

import { delegateToFull } from './delegate.js';

let platform: typeof globalThis.Response | null = null;

/** The platform's Response, as it was before {@link installLightResponse} replaced it. */
export function nativeResponse(): typeof globalThis.Response {
  return (platform ??= globalThis.Response);
}

const NATIVE = Symbol('native');
const BODY = Symbol('body');
const INIT = Symbol('init');
const HEADERS = Symbol('headers');

/** What a light response keeps until the platform's is made. */
interface LightParts {
  [NATIVE]: globalThis.Response | null;
  [BODY]: string | Uint8Array | null;
  [INIT]: ResponseInit | undefined;
  [HEADERS]: globalThis.Headers | null;
}

function native(r: LightParts): globalThis.Response {
  let n = r[NATIVE];
  if (n === null) {
    const init = r[INIT];
    const h = r[HEADERS];
    n = r[NATIVE] = new (nativeResponse())(r[BODY], h === null ? init : { status: init?.status, statusText: init?.statusText, headers: h });
    r[HEADERS] = null;
  }
  return n;
}

function keepsLight(body: unknown): body is string | Uint8Array | null | undefined {
  return body == null || typeof body === 'string' || (body instanceof Uint8Array && body.byteLength === body.buffer.byteLength);
}

const LightResponseFn = function Response(this: LightParts, body?: ConstructorParameters<typeof globalThis.Response>[0], init?: ResponseInit): void {
  if (new.target === undefined) throw new TypeError("Class constructor Response cannot be invoked without 'new'");
  this[HEADERS] = null;
  if (keepsLight(body)) {
    const status = init?.status;
    if (status !== undefined && (!Number.isInteger(status) || status < 200 || status > 599)) {
      throw new RangeError(`init["status"] must be in the range of 200 to 599, inclusive.`);
    }
    this[NATIVE] = null;
    this[BODY] = body ?? null;
    this[INIT] = init;
  } else {
    this[NATIVE] = new (nativeResponse())(body, init);
    this[BODY] = null;
    this[INIT] = undefined;
  }
} as unknown as typeof globalThis.Response;

function build(): typeof globalThis.Response {
  const NativeResponse = nativeResponse();
  const LightResponse = LightResponseFn;

  const proto = Object.create(NativeResponse.prototype, {
    constructor: { value: LightResponse, writable: true, configurable: true },
    status: {
      get(this: LightParts): number {
        return this[NATIVE] !== null ? this[NATIVE].status : (this[INIT]?.status ?? 200);
      },
      configurable: true,
    },
    ok: {
      get(this: LightParts): boolean {
        const s = (this as unknown as globalThis.Response).status;
        return s >= 200 && s < 300;
      },
      configurable: true,
    },
    statusText: {
      get(this: LightParts): string {
        return this[NATIVE] !== null ? this[NATIVE].statusText : (this[INIT]?.statusText ?? '');
      },
      configurable: true,
    },
    headers: {
      get(this: LightParts): globalThis.Headers {
        if (this[NATIVE] !== null) return this[NATIVE].headers;
        let h = this[HEADERS];
        if (h === null) {
          h = this[HEADERS] = new globalThis.Headers(this[INIT]?.headers);
          // What the platform adds for a string body.
          if (typeof this[BODY] === 'string' && !h.has('content-type')) h.set('content-type', 'text/plain;charset=UTF-8');
        }
        return h;
      },
      configurable: true,
    },
  });
  (LightResponse as unknown as { prototype: object }).prototype = proto;
  Object.setPrototypeOf(LightResponse, NativeResponse); // the statics: json, redirect, error
  Object.defineProperty(LightResponse, Symbol.hasInstance, {
    value(this: unknown, x: unknown): boolean {
      // A subclass of the light class keeps the ordinary test.
      return Function.prototype[Symbol.hasInstance].call(this === LightResponse ? NativeResponse : this, x) as boolean;
    },
  });

  // Every other member answers from the platform's response, made on first use, so its own
  // code handed a light response (`new Response(r.body, r)`, `Response.prototype.clone.call(r)`)
  // finds its state.
  delegateToFull<LightParts>(proto, NativeResponse.prototype, new NativeResponse(null), native);
  return LightResponse;
}

let light: typeof globalThis.Response | null = null;
// Its prototype, kept apart for the test the server runs on every response.
let lightProto: object | null = null;

/** The light Response class (see the module notes), made on first use. */
export function lightResponseClass(): typeof globalThis.Response {
  if (light === null) {
    light = build();
    lightProto = light.prototype as object;
  }
  return light;
}

/**
 * True when `res` is an instance of the light class itself (not of a subclass: it may keep its
 * body or status elsewhere) whose platform response was not made (its body may have been read):
 * the server then writes it from {@link lightStatus}, {@link lightStatusText},
 * {@link lightHeaders} and {@link lightBody}, without making the platform's.
 */
export function isLight(res: unknown): boolean {
  return lightProto !== null && typeof res === 'object' && res !== null && Object.getPrototypeOf(res) === lightProto && (res as LightParts)[NATIVE] === null;
}

/** The status of a response {@link isLight} accepted. */
export function lightStatus(res: globalThis.Response): number {
  return (res as unknown as LightParts)[INIT]?.status ?? 200;
}

/** The status text of a response {@link isLight} accepted. */
export function lightStatusText(res: globalThis.Response): string {
  return (res as unknown as LightParts)[INIT]?.statusText ?? '';
}

/**
 * The header fields to write for a response {@link isLight} accepted, null when none were given
 * nor read. A platform `Headers` given as `init.headers` (what a Hono context passes) is given
 * back itself when its fields are the response's (no content type to add), not copied as
 * `res.headers` would: iterate it, do not change it.
 */
export function lightHeaders(res: globalThis.Response): globalThis.Headers | null {
  const r = res as unknown as LightParts;
  if (r[HEADERS] !== null) return r[HEADERS];
  const given = r[INIT]?.headers;
  if (given === undefined) return null;
  if (Object.getPrototypeOf(given) === globalThis.Headers.prototype && (typeof r[BODY] !== 'string' || (given as globalThis.Headers).has('content-type'))) return given as globalThis.Headers;
  return res.headers;
}

/** The body of a response {@link isLight} accepted: a string, bytes, or null for none. */
export function lightBody(res: globalThis.Response): string | Uint8Array | null {
  return (res as unknown as LightParts)[BODY];
}

/**
 * The parts of a light response the server writes without making the platform's: status,
 * status text, the headers as given (null: none) and the body; null when {@link isLight}
 * refuses `res`.
 */
export function lightParts(res: unknown): { status: number; statusText: string; headers: globalThis.Headers | null; body: string | Uint8Array | null } | null {
  if (!isLight(res)) return null;
  const r = res as globalThis.Response;
  return { status: lightStatus(r), statusText: lightStatusText(r), headers: lightHeaders(r), body: lightBody(r) };
}

/**
 * Puts the light class ({@link lightResponseClass}) in `globalThis.Response` (once; later calls do nothing), so that
 * responses a fetch-style app makes cost no stream until something reads one.
 */
export function installLightResponse(): void {
  const cls = lightResponseClass();
  if (globalThis.Response !== cls) globalThis.Response = cls;
}
