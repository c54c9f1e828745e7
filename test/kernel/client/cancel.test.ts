/**
 * Cancellation in each phase of an exchange, through a `RequestContext` (`cancel(ctx, {
 * message })`) and through an AbortSignal: before sending, during the connect (TCP and TLS),
 * while waiting for the head, and while reading the body. Each fails with CanceledError
 * carrying the message, promptly, and the connection is closed (the server sees the close).
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import * as HTTP from '../../../index.js';
import { AbstractBody, CanceledError, Request, RequestContext, Response, type ClientEvent } from '../../../kernel/index.js';
import { deferred, newClient, rawServer, readRequests, rejection, since, stalledPort, startServer, text, within } from '../../helpers/client.js';

/** A raw server that reads requests, tells `arrived`, and never answers. */
async function silent() {
  const arrived = deferred();
  const raw = await rawServer((sock) => readRequests(sock, () => arrived.resolve()));
  return Object.assign(raw, { arrived: arrived.promise });
}

/** A raw server that sends a head and a part of the body, then stalls. */
async function stallsBody() {
  const sent = deferred();
  const raw = await rawServer((sock) =>
    readRequests(sock, () => {
      sock.write('HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\npartial', () => sent.resolve());
    }),
  );
  return Object.assign(raw, { sent: sent.promise });
}

function expectCanceled(err: Error, message: string): void {
  expect(err).toBeInstanceOf(CanceledError);
  expect(err.message).toBe(message);
}

describe('cancel(ctx, { message })', () => {
  it('before sending: a canceled context fails at once and nothing connects', async () => {
    const raw = await silent();
    const ctx = new RequestContext();
    HTTP.cancel(ctx, { message: 'not today' });
    const err = await rejection(newClient().get(`${raw.origin}/`, { context: ctx }));
    expectCanceled(err, 'not today');
    expect(raw.connections).toBe(0);
  });

  it('during the TCP connect (a connect that never completes)', async () => {
    const port = await stalledPort();
    const ctx = new RequestContext();
    const c = newClient();
    const trace = (e: ClientEvent): void => {
      if (e.type === 'RequestEvent') setImmediate(() => HTTP.cancel(ctx, { message: 'stop connecting' }));
    };
    const t0 = performance.now();
    const err = await within(rejection(c.get(`http://127.0.0.1:${port}/`, { context: ctx, trace })), 3000, 'the cancel');
    expectCanceled(err, 'stop connecting');
    expect(since(t0)).toBeLessThan(1000);
    expect(c.transport.connectionCount()).toBe(0);
  });

  it('during the TLS handshake: the server sees the connection close', async () => {
    const raw = await rawServer((sock) => sock.resume()); // accepts, never speaks TLS
    const ctx = new RequestContext();
    const c = newClient();
    const p = rejection(c.get(`https://127.0.0.1:${raw.port}/`, { context: ctx }));
    await within(raw.acceptedAt(1), 3000, 'the TCP connection');
    HTTP.cancel(ctx, { message: 'stop handshaking' });
    expectCanceled(await within(p, 3000, 'the cancel'), 'stop handshaking');
    await within(raw.closedAt(1), 3000, 'the server to see the close');
  });

  it('waiting for the response head: the server sees the connection close', async () => {
    const raw = await silent();
    const ctx = new RequestContext();
    const c = newClient();
    const p = rejection(c.get(`${raw.origin}/`, { context: ctx }));
    await within(raw.arrived, 3000, 'the request');
    const t0 = performance.now();
    HTTP.cancel(ctx, { message: 'no more waiting' });
    expectCanceled(await within(p, 3000, 'the cancel'), 'no more waiting');
    expect(since(t0)).toBeLessThan(500);
    await within(raw.closedAt(1), 3000, 'the server to see the close');
    expect(c.transport.connectionCount()).toBe(0);
  });

  it('while request() buffers the body', async () => {
    const raw = await stallsBody();
    const ctx = new RequestContext();
    const trace = (e: ClientEvent): void => {
      if (e.type === 'ResponseHeadEvent') setImmediate(() => HTTP.cancel(ctx, { message: 'body too slow' }));
    };
    const err = await within(rejection(newClient().get(`${raw.origin}/`, { context: ctx, trace })), 3000, 'the cancel');
    expectCanceled(err, 'body too slow');
    await within(raw.closedAt(1), 3000, 'the server to see the close');
  });

  it('while the caller reads a dispatched body', async () => {
    const raw = await stallsBody();
    const ctx = new RequestContext();
    const c = newClient();
    const res = await c.dispatch(Object.assign(new Request('GET', '/'), { url: `${raw.origin}/` }), { context: ctx });
    const body = res.body as AbstractBody;
    const buf = new Uint8Array(100);
    expect(await body.read(buf)).toBe(7);
    const pending = rejection(body.read(buf));
    HTTP.cancel(ctx, { message: 'reader gave up' });
    expectCanceled(await within(pending, 3000, 'the read to fail'), 'reader gave up');
    await within(raw.closedAt(1), 3000, 'the server to see the close');
  });

  it('canceling after the call finished does nothing: the connection stays pooled', async () => {
    const s = await startServer(() => new Response(200, 'done'));
    const ctx = new RequestContext();
    const c = newClient();
    expect(text(await c.get(`${s.origin}/`, { context: ctx }))).toBe('done');
    HTTP.cancel(ctx, { message: 'late' });
    expect(text(await c.get(`${s.origin}/`))).toBe('done');
    expect(s.connections).toBe(1);
    expect(s.closedConnections).toBe(0);
  });

  it('a canceled call leaves the client usable', async () => {
    const raw = await silent();
    const s = await startServer(() => new Response(200, 'still fine'));
    const ctx = new RequestContext();
    const c = newClient();
    const p = rejection(c.get(`${raw.origin}/`, { context: ctx }));
    await raw.arrived;
    HTTP.cancel(ctx, 'bye');
    expectCanceled(await p, 'bye');
    expect(text(await c.get(`${s.origin}/`))).toBe('still fine');
  });
});

describe('signal (AbortSignal)', () => {
  it('an already aborted signal fails at once and nothing connects', async () => {
    const raw = await silent();
    const ac = new AbortController();
    ac.abort('aborted early');
    const err = await rejection(newClient().get(`${raw.origin}/`, { signal: ac.signal }));
    expectCanceled(err, 'aborted early');
    expect(raw.connections).toBe(0);
  });

  it('during the TCP connect', async () => {
    const port = await stalledPort();
    const ac = new AbortController();
    const trace = (e: ClientEvent): void => {
      if (e.type === 'RequestEvent') setImmediate(() => ac.abort('abort connect'));
    };
    const err = await within(rejection(newClient().get(`http://127.0.0.1:${port}/`, { signal: ac.signal, trace })), 3000, 'the abort');
    expectCanceled(err, 'abort connect');
  });

  it('waiting for the head: the reason becomes the message and the server sees the close', async () => {
    const raw = await silent();
    const ac = new AbortController();
    const p = rejection(newClient().get(`${raw.origin}/`, { signal: ac.signal }));
    await within(raw.arrived, 3000, 'the request');
    ac.abort(new Error('user pressed stop'));
    expectCanceled(await within(p, 3000, 'the abort'), 'user pressed stop');
    await within(raw.closedAt(1), 3000, 'the server to see the close');
  });

  it('abort() without a reason still gives a CanceledError', async () => {
    const raw = await silent();
    const ac = new AbortController();
    const p = rejection(newClient().get(`${raw.origin}/`, { signal: ac.signal }));
    await raw.arrived;
    ac.abort();
    const err = await within(p, 3000, 'the abort');
    expect(err).toBeInstanceOf(CanceledError);
    expect(err.message.length).toBeGreaterThan(0);
  });

  it('while request() buffers the body', async () => {
    const raw = await stallsBody();
    const ac = new AbortController();
    const trace = (e: ClientEvent): void => {
      if (e.type === 'ResponseHeadEvent') setImmediate(() => ac.abort('abort body'));
    };
    const err = await within(rejection(newClient().get(`${raw.origin}/`, { signal: ac.signal, trace })), 3000, 'the abort');
    expectCanceled(err, 'abort body');
    await within(raw.closedAt(1), 3000, 'the server to see the close');
  });

  it('dispatch honours signal too', async () => {
    const raw = await silent();
    const ac = new AbortController();
    const p = rejection(newClient().dispatch(Object.assign(new Request('GET', '/'), { url: `${raw.origin}/` }), { signal: ac.signal }));
    await within(raw.arrived, 3000, 'the request');
    ac.abort('abort dispatch');
    expectCanceled(await within(p, 1500, 'dispatch to be aborted'), 'abort dispatch');
    await within(raw.closedAt(1), 3000, 'the server to see the close');
  });

  it('one signal reused for many calls does not pile up abort listeners', async () => {
    const s = await startServer(() => new Response(200, 'ok'));
    const c = newClient();
    const ac = new AbortController();
    for (let i = 0; i < 20; i++) await c.get(`${s.origin}/${i}`, { signal: ac.signal });
    // Each finished call must remove its listener (else: a leak and MaxListenersExceededWarning).
    expect(getEventListeners(ac.signal, 'abort').length).toBe(0);
  });

  it('aborting after the call finished does not cancel the caller context', async () => {
    const s = await startServer(() => new Response(200, 'ok'));
    const ac = new AbortController();
    const ctx = new RequestContext();
    await newClient().get(`${s.origin}/`, { signal: ac.signal, context: ctx });
    ac.abort('too late');
    expect(ctx.canceled).toBe(false);
  });

  it('a signal and a context together: either cancels', async () => {
    const raw = await silent();
    const ac = new AbortController();
    const ctx = new RequestContext();
    const p = rejection(newClient().get(`${raw.origin}/`, { signal: ac.signal, context: ctx }));
    await raw.arrived;
    ac.abort('signal wins');
    expectCanceled(await within(p, 3000, 'the abort'), 'signal wins');
  });
});
