/**
 * handlerTimeout: answers at the timeout with the configured status, body and content type;
 * the handler runs with a child context (deadline = earlier of the timeout and the request's
 * own; canceled with the request's; canceled at the timeout) and keeps running until it
 * returns; request handlers only. Slow handlers here wait on their context's signal (an
 * event), never on a sleep.
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { ArgumentError, CallbackBody, CanceledError, Request, RequestContext, Response, type RequestHandler, type StreamHandler } from '../../../kernel/index.js';
import { handlerTimeout } from '../../../plugins/middleware/index.js';
import { getParam, Router } from '../../../plugins/router/index.js';
import { deferred, exchange, get, startServer, startStreamServer } from '../../helpers/server.js';

/** Resolves when `ctx` is canceled (through its AbortSignal). */
function canceledSignal(ctx: RequestContext): Promise<unknown> {
  const s = ctx.signal;
  return s.aborted ? Promise.resolve(s.reason) : new Promise((r) => s.addEventListener('abort', () => r(s.reason), { once: true }));
}

describe('handlerTimeout', () => {
  it('passes a fast answer through, sync or async, unchanged', async () => {
    const res = new Response(200, 'fast');
    const sync = handlerTimeout(1000)(() => res);
    expect(await sync(new Request('GET', '/'))).toBe(res);
    const later = handlerTimeout(1000)(async () => res);
    expect(await later(new Request('GET', '/'))).toBe(res);
  });

  it('answers 503 "handler timed out" (text/plain; charset=utf-8) at the timeout and cancels the handler context', async () => {
    const saw = deferred<{ reason: unknown; canceled: boolean; ctxReason: string | null }>();
    const finished = deferred();
    const slow: RequestHandler = async (req) => {
      const reason = await canceledSignal(req.ctx);
      saw.resolve({ reason, canceled: req.ctx.canceled, ctxReason: req.ctx.reason });
      // Still running after the answer: it returns later, and that answer is dropped.
      finished.resolve();
      return new Response(200, 'too late');
    };
    const { port, errors } = await startServer(handlerTimeout(50)(slow));
    const t0 = performance.now();
    const { res } = await exchange(port, get('/slow'));
    const took = performance.now() - t0;
    expect([res.status, res.text, res.headers.get('Content-Type')]).toEqual([503, 'handler timed out', 'text/plain; charset=utf-8']);
    expect(took).toBeGreaterThanOrEqual(45);
    const s = await saw.promise;
    expect(s.canceled).toBe(true);
    expect(s.ctxReason).toBe('handler timed out');
    expect(s.reason).toBeInstanceOf(CanceledError);
    await finished.promise;
    // The server is fine afterwards, and nothing was reported.
    expect((await exchange(port, get('/again'))).res.status).toBe(503);
    expect(errors).toEqual([]);
  });

  it('status, body and contentType options', async () => {
    const mw = handlerTimeout(20, { status: 504, body: '{"error":"slow"}', contentType: 'application/json' });
    const h = mw((req) => canceledSignal(req.ctx).then(() => new Response(200)));
    const res = await h(new Request('GET', '/'));
    expect([res.status, res.body, res.headers.get('Content-Type')]).toEqual([504, '{"error":"slow"}', 'application/json']);
  });

  it("the handler's context is a child: the earlier deadline wins, and canceling the request's cancels it", async () => {
    let seen: RequestContext | null = null;
    const capture = handlerTimeout(10_000)((req) => {
      seen = req.ctx;
      return canceledSignal(req.ctx).then(() => new Response(200, 'done'));
    });
    // The request's own deadline is earlier than the timeout: the child has it.
    const parent = new RequestContext({ deadline: performance.now() + 60_000 });
    const early = parent.deadline - 55_000;
    parent.setDeadline(early);
    const req = new Request('GET', '/x', { context: parent });
    const p = capture(req);
    expect(seen).not.toBe(parent);
    expect(seen!.deadline).toBe(early);
    // Without a request deadline, the child's deadline is about now + timeout.
    const req2 = new Request('GET', '/y');
    const before = performance.now();
    const p2 = capture(req2);
    expect(seen!.deadline).toBeGreaterThanOrEqual(before + 10_000);
    expect(seen!.deadline).toBeLessThanOrEqual(performance.now() + 10_000);
    // Canceling the request's context cancels the handler's; the handler then answers itself.
    parent.cancel('client went away');
    req2.ctx.cancel('bye');
    expect((await p).body).toBe('done');
    expect((await p2).body).toBe('done');
    expect(req.ctx).toBe(parent); // the original request keeps its own context
  });

  it('route variables stay readable through the copy (handlerTimeout as Router middleware)', async () => {
    const r = new Router({ middleware: handlerTimeout(1000) }).get('/items/{id}', (req) => new Response(200, `item ${getParam(req, 'id')}`));
    const { port } = await startServer(r);
    expect((await exchange(port, get('/items/5'))).res.text).toBe('item 5');
  });

  it('a handler that throws before the timeout is a 500; one that fails after it is dropped quietly', async () => {
    const boom = handlerTimeout(1000)(async () => {
      throw new Error('early');
    });
    await expect(boom(new Request('GET', '/'))).rejects.toThrow('early');
    await expect(
      handlerTimeout(1000)(() => {
        throw new Error('sync');
      })(new Request('GET', '/')),
    ).rejects.toThrow('sync');
    const lateFail = deferred();
    const late = handlerTimeout(10)(async (req) => {
      await canceledSignal(req.ctx);
      lateFail.resolve();
      throw new Error('late');
    });
    expect((await late(new Request('GET', '/'))).status).toBe(503);
    await lateFail.promise;
    await new Promise((r) => setImmediate(r)); // an unhandled rejection would fail the run here
  });

  it("a late answer's streamed body is closed", async () => {
    const closed = deferred();
    const h = handlerTimeout(10)(async (req) => {
      await canceledSignal(req.ctx);
      return new Response(
        200,
        new CallbackBody(
          () => 0,
          () => closed.resolve(),
        ),
      );
    });
    expect((await h(new Request('GET', '/'))).status).toBe(503);
    await closed.promise;
  });

  it('request handlers only: wrapping a stream handler fails with ArgumentError (the server answers 500)', async () => {
    const wrapped = handlerTimeout(1000)((async () => new Response(200)) as RequestHandler) as unknown as StreamHandler;
    const { port, errors } = await startStreamServer(wrapped);
    expect((await exchange(port, get('/'))).res.status).toBe(500);
    expect(errors[0]!.error).toBeInstanceOf(ArgumentError);
  });

  it('bad arguments are ArgumentErrors', () => {
    for (const ms of [0, -1, Number.NaN, Infinity, 2 ** 31, '5' as unknown as number]) expect(() => handlerTimeout(ms)).toThrow(ArgumentError);
    expect(() => handlerTimeout(10, { status: 42 })).toThrow(ArgumentError);
    expect(() => handlerTimeout(10, { body: 5 as unknown as string })).toThrow(ArgumentError);
    expect(() => handlerTimeout(10, { contentType: 5 as unknown as string })).toThrow(ArgumentError);
    expect(() => handlerTimeout(10)('x' as unknown as RequestHandler)).toThrow(ArgumentError);
  });

  it('a contentType with CR, LF or another control character is refused when the middleware is made, not at the first timeout', () => {
    for (const bad of ['text/plain\r\nX-Injected: 1', 'text/plain\nX-Injected: 1', 'text/plain\r', 'text/\0plain', 'text/plain\x7f', 'text/plain\x01']) {
      expect(() => handlerTimeout(10, { contentType: bad }), JSON.stringify(bad)).toThrow(/invalid character .* in the value of header "Content-Type"/);
    }
    // Neighbours that are valid field values: HTAB inside, obs-text.
    for (const ok of ['text/plain;\tcharset=utf-8', 'text/plain; x=\u00e9', 'application/problem+json']) expect(() => handlerTimeout(10, { contentType: ok })).not.toThrow();
  });
});
