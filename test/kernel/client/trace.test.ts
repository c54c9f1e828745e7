/**
 * Client trace events (`trace` option): RequestEvent, ResponseHeadEvent and DoneEvent with
 * their fields for a success, a failure before any response and a StatusError; `verbose: 1`
 * and `verbose: 2` print summaries to stderr (captured by spying on process.stderr.write).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import * as HTTP from '../../../index.js';
import { ClientEvent, ConnectError, createKernel, definePlugin, DoneEvent, RequestEvent, Response, ResponseHeadEvent, StatusError, type AnyClientEvent } from '../../../kernel/index.js';
import { RetryEvent, verbosePrinter } from '../../../kernel/client/index.js';
import { closedPort, newClient, rejection, startServer } from '../../helpers/client.js';

afterEach(() => {
  vi.restoreAllMocks();
});

function collect(): { events: AnyClientEvent[]; trace: (e: ClientEvent) => void } {
  const events: AnyClientEvent[] = [];
  return { events, trace: (e) => events.push(e as AnyClientEvent) };
}

/** Captures what is written to stderr until restored. */
function captureStderr(): string[] {
  const lines: string[] = [];
  vi.spyOn(process.stderr, 'write').mockImplementation(((chunk: string | Uint8Array) => {
    lines.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
    return true;
  }) as typeof process.stderr.write);
  return lines;
}

describe('trace events', () => {
  it('a successful call: RequestEvent, ResponseHeadEvent, DoneEvent with their fields', async () => {
    const s = await startServer(() => new Response(201, { 'X-T': '1' }, 'created'));
    const { events, trace } = collect();
    const t0 = performance.now();
    // A plain client (no plugins), so the exact sequence is the kernel's own.
    const res = await newClient().post(`${s.origin}/items?x=1`, { body: 'b', trace });
    expect(events.map((e) => e.type)).toEqual(['RequestEvent', 'ResponseHeadEvent', 'DoneEvent']);
    const [rq, rh, done] = events as [RequestEvent, ResponseHeadEvent, DoneEvent];
    expect(rq).toBeInstanceOf(RequestEvent);
    expect(rq.attempt).toBe(1);
    expect(rq.url).toBe(`${s.origin}/items?x=1`);
    expect(rq.request.method).toBe('POST');
    expect(rq.request.target).toBe('/items?x=1');
    expect(rh).toBeInstanceOf(ResponseHeadEvent);
    expect(rh.attempt).toBe(1);
    expect(rh.status).toBe(201);
    expect(rh.url).toBe(`${s.origin}/items?x=1`);
    expect(rh.response).toBe(res);
    expect(rh.elapsedMs).toBeGreaterThanOrEqual(0);
    expect(done).toBeInstanceOf(DoneEvent);
    expect(done.url).toBe(`${s.origin}/items?x=1`);
    expect(done.response).toBe(res);
    expect(done.error).toBeNull();
    expect(done.attempts).toBe(1);
    expect(done.elapsedMs).toBeGreaterThanOrEqual(rh.elapsedMs);
    expect(done.elapsedMs).toBeLessThanOrEqual(performance.now() - t0 + 1);
    // Ordered in time.
    expect(rq.time).toBeLessThanOrEqual(rh.time);
    expect(rh.time).toBeLessThanOrEqual(done.time);
    for (const e of events) expect(e).toBeInstanceOf(ClientEvent);
  });

  it('a call that fails before any response: RequestEvent then DoneEvent with the error', async () => {
    const port = await closedPort();
    const { events, trace } = collect();
    const err = await rejection(newClient().get(`http://127.0.0.1:${port}/nope`, { trace }));
    expect(err).toBeInstanceOf(ConnectError);
    expect(events.map((e) => e.type)).toEqual(['RequestEvent', 'DoneEvent']);
    const done = events[1] as DoneEvent;
    expect(done.error).toBe(err);
    expect(done.response).toBeNull();
    expect(done.url).toBe(`http://127.0.0.1:${port}/nope`);
    expect(done.elapsedMs).toBeGreaterThanOrEqual(0);
  });

  it('a call that fails after retries: DoneEvent counts every attempt', async () => {
    const port = await closedPort();
    const retryTwice = definePlugin({
      name: 'retry-twice',
      register(kernel) {
        kernel.hooks.client.onRetry.tap('retry-twice', (state) => ({ retry: state.attempt < 3 }));
      },
    });
    const kernel = await createKernel().register(retryTwice).ready();
    const { events, trace } = collect();
    const err = await rejection(newClient({ kernel }).get(`http://127.0.0.1:${port}/again`, { trace }));
    expect(err).toBeInstanceOf(ConnectError);
    expect(events.map((e) => e.type)).toEqual(['RequestEvent', 'RetryEvent', 'RequestEvent', 'RetryEvent', 'RequestEvent', 'RetrySkippedEvent', 'DoneEvent']);
    const done = events.at(-1) as DoneEvent;
    expect(done.error).toBe(err);
    expect(done.attempts).toBe(3);
    await kernel.close();
  });

  it('a StatusError: DoneEvent carries the error and the final response', async () => {
    const s = await startServer(() => new Response(404, 'missing'));
    const { events, trace } = collect();
    const err = await rejection(newClient().get(`${s.origin}/x`, { trace }));
    expect(err).toBeInstanceOf(StatusError);
    const head = events.find((e) => e.type === 'ResponseHeadEvent') as ResponseHeadEvent;
    expect(head.status).toBe(404);
    const done = events.at(-1) as DoneEvent;
    expect(done.type).toBe('DoneEvent');
    expect(done.error).toBe(err);
    expect(done.response?.status).toBe(404);
  });

  it('a trace given as a Client default sees every call of the client', async () => {
    const s = await startServer(() => new Response(200, 'ok'));
    const { events, trace } = collect();
    const c = newClient({ trace });
    await c.get(`${s.origin}/1`);
    await c.head(`${s.origin}/2`);
    expect(events.filter((e) => e.type === 'DoneEvent')).toHaveLength(2);
    expect(events.filter((e) => e.type === 'RequestEvent').map((e) => (e as RequestEvent).request.method)).toEqual(['GET', 'HEAD']);
  });

  it('dispatch reports RequestEvent and ResponseHeadEvent', async () => {
    const s = await startServer(() => new Response(200, 'ok'));
    const { events, trace } = collect();
    const req = Object.assign(new HTTP.Request('GET', '/d'), { url: `${s.origin}/d` });
    const res = await HTTP.dispatch(req, { trace });
    (res.body as HTTP.AbstractBody).close();
    expect(events.map((e) => e.type).slice(0, 2)).toEqual(['RequestEvent', 'ResponseHeadEvent']);
  });

  it('a trace that is not a function is an ArgumentError', async () => {
    const s = await startServer(() => new Response(200, 'ok'));
    expect(await rejection(HTTP.get(`${s.origin}/`, { trace: 'x' as unknown as () => void }))).toBeInstanceOf(HTTP.ArgumentError);
  });
});

describe('verbose', () => {
  it('verbose: 1 prints one-line summaries of the request, the response and the end to stderr', async () => {
    const s = await startServer(() => new Response(200, 'ok'));
    const lines = captureStderr();
    await newClient().get(`${s.origin}/v1`, { verbose: 1 });
    vi.restoreAllMocks();
    const out = lines.join('');
    expect(out).toContain(`GET ${s.origin}/v1`);
    expect(out).toMatch(/< 200 .*\/v1/);
    expect(out).toMatch(/= 200 .*\/v1/);
    // One line each, no heads.
    expect(lines.filter((l) => l.includes('switchyard'))).toHaveLength(3);
    expect(out).not.toMatch(/User-Agent/i);
  });

  it('verbose on the top-level helpers and as a Client default', async () => {
    const s = await startServer(() => new Response(200, 'ok'));
    const lines = captureStderr();
    await HTTP.get(`${s.origin}/top`, { verbose: 1 });
    await newClient({ verbose: 1 }).get(`${s.origin}/dflt`);
    vi.restoreAllMocks();
    const out = lines.join('');
    expect(out).toContain(`GET ${s.origin}/top`);
    expect(out).toContain(`GET ${s.origin}/dflt`);
  });

  it('verbose: 2 adds the request and response heads', async () => {
    const s = await startServer(() => new Response(200, { 'X-Resp': 'yes' }, 'ok'));
    const lines = captureStderr();
    await HTTP.get(`${s.origin}/v2`, { verbose: 2, headers: { 'X-Req': 'me' } });
    vi.restoreAllMocks();
    const out = lines.join('');
    expect(out).toMatch(/X-Req: me/);
    expect(out).toMatch(/X-Resp: yes/);
  });

  it('verbose: 1 prints a failure, and still calls trace', async () => {
    const port = await closedPort();
    const { events, trace } = collect();
    const lines = captureStderr();
    await rejection(newClient().get(`http://127.0.0.1:${port}/f`, { verbose: 1, trace }));
    vi.restoreAllMocks();
    const out = lines.join('');
    expect(out).toContain(`http://127.0.0.1:${port}/f`);
    expect(out).toMatch(/failed/);
    expect(events.map((e) => e.type)).toEqual(['RequestEvent', 'DoneEvent']);
  });

  it('prints durations rounded to a tenth of a millisecond, the retry delay too', () => {
    const lines: string[] = [];
    verbosePrinter(1, (l) => lines.push(l))(new RetryEvent(1, 19.79235077876767, 'status 503', null, 503));
    expect(lines).toEqual(['switchyard ~ retry after attempt 1 in 19.8 ms: status 503']);
  });

  it('verbose: 0 (default) prints nothing; a bad level is an ArgumentError', async () => {
    const s = await startServer(() => new Response(200, 'ok'));
    const lines = captureStderr();
    await HTTP.get(`${s.origin}/quiet`);
    await HTTP.get(`${s.origin}/quiet`, { verbose: 0 });
    vi.restoreAllMocks();
    expect(lines.join('')).not.toContain('switchyard');
    expect(await rejection(HTTP.get(`${s.origin}/`, { verbose: 3 as 1 }))).toBeInstanceOf(HTTP.ArgumentError);
  });
});
