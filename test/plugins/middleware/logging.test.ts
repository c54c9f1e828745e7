/**
 * loggingMiddleware: one record per request in group `access` for request handlers, stream
 * handlers and Routers; error records with the error and the status sent, the error
 * rethrown; for streams the response is finished before logging. Loggers: a capturing
 * pino-shaped object, real pino (the logger fastify ships), and the built-in default logger.
 */
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ArgumentError, CallbackBody, ProtocolError, Request, Response, type RequestHandler, type Stream, type StreamHandler } from '../../../kernel/index.js';
import { createLogger, Handlers, loggingMiddleware, setDefaultLogger, type AccessRecord, type Logger, type LogLevel } from '../../../plugins/middleware/index.js';
import { DUAL, getParam, Router } from '../../../plugins/router/index.js';
import { exchange, get, rawClient, startServer, startStreamServer, waitFor } from '../../helpers/server.js';

interface Entry {
  level: LogLevel;
  obj: AccessRecord;
  msg: string | undefined;
}

/** A pino-shaped logger that keeps what it is given. */
function capture(): { logger: Logger; entries: Entry[] } {
  const entries: Entry[] = [];
  const at = (level: LogLevel) => (obj: object, msg?: string) => entries.push({ level, obj: obj as AccessRecord, msg });
  return { entries, logger: { trace: at('trace'), debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), fatal: at('fatal') } };
}

afterEach(() => setDefaultLogger(null));

describe('request handlers', () => {
  it('one info record per request: group, method, target, status, elapsedMs, length; no peer', async () => {
    const { logger, entries } = capture();
    const h = loggingMiddleware(() => new Response(201, 'hello'), { logger });
    const { port } = await startServer(h);
    await exchange(port, get('/a?b=1'));
    expect(entries).toHaveLength(1);
    const e = entries[0]!;
    expect(e.level).toBe('info');
    expect(e.obj).toMatchObject({ group: 'access', method: 'GET', target: '/a?b=1', status: 201, length: 5 });
    expect(e.obj).not.toHaveProperty('peer');
    expect(e.obj.elapsedMs).toBeGreaterThanOrEqual(0);
    expect(e.msg).toMatch(/^GET \/a\?b=1 201 [\d.]+ms$/);
  });

  it('level option; async handlers; a streamed body of unknown length logs length null', async () => {
    const { logger, entries } = capture();
    let sent = false;
    const h = loggingMiddleware(
      async () =>
        new Response(
          200,
          new CallbackBody((dst) => {
            if (sent) return 0;
            sent = true;
            dst[0] = 0x78;
            return 1;
          }),
        ),
      { logger, level: 'debug' },
    );
    const { port } = await startServer(h);
    expect((await exchange(port, get('/s'))).res.text).toBe('x');
    expect(entries.map((e) => [e.level, e.obj.status, e.obj.length])).toEqual([['debug', 200, null]]);
  });

  it('a throw is logged at error level with the error and status 500, then rethrown (the server answers 500)', async () => {
    const { logger, entries } = capture();
    const err = new Error('kaput');
    const h = loggingMiddleware(
      () => {
        throw err;
      },
      { logger },
    );
    const { port, errors } = await startServer(h);
    expect((await exchange(port, get('/x'))).res.status).toBe(500);
    expect(entries).toHaveLength(1);
    expect(entries[0]!.level).toBe('error');
    expect(entries[0]!.obj).toMatchObject({ status: 500, method: 'GET', target: '/x', length: null });
    expect(entries[0]!.obj.err).toBe(err);
    expect(errors[0]!.error).toBe(err);
    // Async rejection too.
    const rejecting: RequestHandler = async () => Promise.reject(new Error('later'));
    const r = loggingMiddleware(rejecting, { logger });
    await expect(r(new Request('GET', '/y'))).rejects.toThrow('later');
    expect(entries[1]).toMatchObject({ level: 'error', obj: { status: 500, target: '/y' } });
  });
});

describe('stream handlers', () => {
  it('finishes the response (closeWrite) before logging; peer is ip:port; length from Content-Length', async () => {
    const { logger, entries } = capture();
    const h = loggingMiddleware(
      async (s: Stream) => {
        s.setStatus(202);
        s.setHeader('Content-Length', '3');
        await s.write('abc');
        // No closeWrite: the middleware does it.
      },
      { logger },
    );
    const { port } = await startStreamServer(h);
    const c = await rawClient(port);
    await c.write(get('/st'));
    const res = await c.response();
    expect([res.status, res.text]).toEqual([202, 'abc']);
    await waitFor(() => entries.length === 1);
    expect(entries[0]!.obj).toMatchObject({ group: 'access', method: 'GET', target: '/st', status: 202, length: 3, peer: `127.0.0.1:${c.socket.localPort}` });
  });

  it('a stream the handler upgraded is logged with status 101 at the switch, while the new protocol still runs', async () => {
    const { logger, entries } = capture();
    const h = loggingMiddleware(
      async (s: Stream) => {
        const { socket } = s.upgrade();
        socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n');
        // The new protocol: runs until the client says bye.
        socket.on('data', () => socket.end('BYE'));
        socket.resume();
        await once(socket, 'close');
      },
      { logger },
    );
    const { port } = await startStreamServer(h);
    const c = await rawClient(port);
    await c.write('GET /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n');
    await waitFor(() => c.received.toString('latin1').includes('\r\n\r\n'), 3000, 'the 101');
    await waitFor(() => entries.length === 1, 3000, 'the record of the switch, with the connection still open');
    expect(entries[0]!.level).toBe('info');
    expect(entries[0]!.obj).toMatchObject({ group: 'access', method: 'GET', target: '/up', status: 101, length: null, peer: `127.0.0.1:${c.socket.localPort}` });
    expect(entries[0]!.msg).toMatch(/^GET \/up 101 [\d.]+ms$/);
    c.socket.write('bye');
    await waitFor(() => c.ended, 3000, 'the end the handler wrote');
    expect(c.received.toString('latin1')).toMatch(/^HTTP\/1\.1 101 [^]*BYE$/);
    // One record for the exchange: none more when the session ends.
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(entries).toHaveLength(1);
  });

  it('a handler that throws after the upgrade is logged at error level with the 101 it sent, not 200', async () => {
    const { logger, entries } = capture();
    const err = new Error('session broke');
    const h = loggingMiddleware(
      async (s: Stream) => {
        const { socket } = s.upgrade();
        socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n');
        throw err;
      },
      { logger },
    );
    const { port, errors } = await startStreamServer(h);
    const c = await rawClient(port);
    await c.write('GET /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n');
    await waitFor(() => entries.length === 2, 3000, 'the switch and the failure');
    expect(entries.map((e) => [e.level, e.obj.status])).toEqual([
      ['info', 101],
      ['error', 101],
    ]);
    expect(entries[1]!.obj.err).toBe(err);
    await waitFor(() => errors.length === 1, 3000, 'the error reported to the server');
    expect(errors[0]!.error).toBe(err);
  });

  it('a body shorter than its Content-Length is logged as that failure, status 500, and the server answers 500', async () => {
    const { logger, entries } = capture();
    const h = loggingMiddleware(
      async (s: Stream) => {
        s.setHeader('Content-Length', '10');
        await s.write('abc');
      },
      { logger },
    );
    const { port, errors } = await startStreamServer(h);
    expect((await exchange(port, get('/short'))).res.status).toBe(500);
    expect(entries).toHaveLength(1);
    expect(entries[0]!.level).toBe('error');
    expect(entries[0]!.obj.status).toBe(500);
    expect(entries[0]!.obj.err).toBeInstanceOf(ProtocolError);
    expect(errors[0]!.error).toBe(entries[0]!.obj.err);
  });

  it('a throw after a chunked head went out logs the status that was sent', async () => {
    const { logger, entries } = capture();
    const h = loggingMiddleware(
      async (s: Stream) => {
        s.setStatus(206);
        await s.write('partial');
        throw new Error('mid-body');
      },
      { logger },
    );
    const { port } = await startStreamServer(h);
    const c = await rawClient(port);
    await c.write(get('/mid'));
    await c.untilClosed();
    expect(entries[0]!.obj).toMatchObject({ status: 206, err: { message: 'mid-body' } });
  });
});

describe('wrapping a Router', () => {
  it('serves both entry points and keeps the dual brand; route data is visible to the routes', async () => {
    const { logger, entries } = capture();
    const r = new Router().get('/u/{id}', (req) => new Response(200, `u${getParam(req, 'id')}`));
    const logged = loggingMiddleware(r, { logger });
    expect(logged[DUAL]).toBe(true);
    const a = await startServer(logged);
    expect((await exchange(a.port, get('/u/1'))).res.text).toBe('u1');
    expect((await exchange(a.port, get('/nope'))).res.status).toBe(404);
    expect(entries.map((e) => e.obj.status)).toEqual([200, 404]);

    const sr = new Router<StreamHandler>().get('/s/{id}', async (s) => s.write(`s${getParam(s.request, 'id')}`));
    const b = await startStreamServer(loggingMiddleware(sr, { logger }));
    expect((await exchange(b.port, get('/s/2'))).res.text).toBe('s2');
    await waitFor(() => entries.length === 3);
    expect(entries[2]!.obj).toMatchObject({ target: '/s/2', status: 200, length: null });
    expect(entries[2]!.obj.peer).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it('as Router middleware: each route logs, 404s do not', async () => {
    const { logger, entries } = capture();
    const r = new Router({ middleware: (h) => loggingMiddleware(h, { logger }) }).get('/a', () => new Response(200, 'a'));
    const { port } = await startServer(r);
    await exchange(port, get('/a'));
    await exchange(port, get('/b'));
    expect(entries.map((e) => e.obj.target)).toEqual(['/a']);
  });

  it('loggingMiddleware itself is a Router middleware (default logger), composed with handlerTimeout', async () => {
    const { logger, entries } = capture();
    setDefaultLogger(logger);
    const plain = new Router({ middleware: loggingMiddleware }).get('/p', () => new Response(200, 'p'));
    const timed = new Router({ middleware: (h) => loggingMiddleware(Handlers.handlerTimeout(1000)(h)) }).get('/t/{id}', (req) => new Response(200, `t${getParam(req, 'id')}`));
    const a = await startServer(plain);
    const b = await startServer(timed);
    expect((await exchange(a.port, get('/p'))).res.text).toBe('p');
    expect((await exchange(b.port, get('/t/4'))).res.text).toBe('t4');
    expect(entries.map((e) => [e.obj.target, e.obj.status])).toEqual([
      ['/p', 200],
      ['/t/4', 200],
    ]);
  });
});

describe('loggers', () => {
  it('real pino receives the records: level 30, group access, msg, err serialized on failure', async () => {
    const lines: string[] = [];
    const dest = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    });
    const logger = pino({ base: null }, dest);
    const ok = loggingMiddleware(() => new Response(200, 'ok'), { logger });
    const bad = loggingMiddleware(
      () => {
        throw new TypeError('bad thing');
      },
      { logger },
    );
    const { port } = await startServer(ok);
    const b = await startServer(bad);
    await exchange(port, get('/p'));
    await exchange(b.port, get('/q'));
    await waitFor(() => lines.length === 2);
    const [one, two] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(one).toMatchObject({ level: 30, group: 'access', method: 'GET', target: '/p', status: 200, length: 2 });
    expect(one!.msg).toMatch(/^GET \/p 200 /);
    expect(two).toMatchObject({ level: 50, status: 500, err: { type: 'TypeError', message: 'bad thing' } });
    expect((two!.err as { stack: string }).stack).toContain('bad thing');
  });

  it('without a logger, records go to the default logger, looked up at each record (setDefaultLogger)', async () => {
    const h = loggingMiddleware(() => new Response(204));
    const first = capture();
    setDefaultLogger(first.logger);
    const { port } = await startServer(h);
    await exchange(port, get('/1'));
    const second = capture();
    setDefaultLogger(second.logger);
    await exchange(port, get('/2'));
    expect(first.entries.map((e) => e.obj.target)).toEqual(['/1']);
    expect(second.entries.map((e) => e.obj.target)).toEqual(['/2']);
  });

  it('the built-in logger writes pino JSON lines (level filter) or readable lines with the error stack', () => {
    const out: string[] = [];
    const json = createLogger({ destination: { write: (l: string) => out.push(l) } });
    json.debug({ group: 'access' }, 'dropped below info');
    json.info({ group: 'access', status: 200, n: 10n }, 'GET / 200 1ms');
    json.error({ group: 'access', err: new RangeError('oops') }, 'GET / 500 1ms');
    expect(out).toHaveLength(2);
    const a = JSON.parse(out[0]!) as Record<string, unknown>;
    expect(a).toMatchObject({ level: 30, group: 'access', status: 200, n: '10', msg: 'GET / 200 1ms', pid: process.pid });
    expect(typeof a.time).toBe('number');
    expect(JSON.parse(out[1]!)).toMatchObject({ level: 50, err: { type: 'RangeError', message: 'oops' } });
    const pretty: string[] = [];
    const p = createLogger({ format: 'pretty', level: 'debug', destination: { write: (l: string) => pretty.push(l) } });
    p.debug({ group: 'access', status: 404, peer: '127.0.0.1:1' }, 'GET /x 404 0.5ms');
    p.error({ group: 'access', err: new Error('trace me') }, 'GET /y 500 1ms');
    expect(pretty[0]).toMatch(/^\S+Z DEBUG \(access\): GET \/x 404 0\.5ms status=404 peer=127\.0\.0\.1:1\n$/);
    expect(pretty[1]).toMatch(/ERROR \(access\): GET \/y 500 1ms\n {4}Error: trace me\n\s+at /);
  });

  it('bad arguments are ArgumentErrors; Handlers holds the reference names', () => {
    expect(() => loggingMiddleware('x' as unknown as RequestHandler)).toThrow(ArgumentError);
    expect(() => loggingMiddleware(() => new Response(200), { logger: {} as Logger })).toThrow(/pino-compatible/);
    expect(() => loggingMiddleware(() => new Response(200), { level: 'loud' as LogLevel })).toThrow(ArgumentError);
    expect(() => setDefaultLogger({ info() {} } as unknown as Logger)).toThrow(ArgumentError);
    expect(() => createLogger({ format: 'xml' as 'json' })).toThrow(ArgumentError);
    expect(Object.keys(Handlers).sort()).toEqual(
      ['Router', 'createLogger', 'getDefaultLogger', 'getParam', 'getParams', 'getRoute', 'handlerTimeout', 'loggingMiddleware', 'register', 'setDefaultLogger'].sort(),
    );
  });
});
