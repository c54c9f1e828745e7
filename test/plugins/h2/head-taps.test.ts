/**
 * The default preset's HTTP/2 client runs its synchronous head taps (cookies, decompression,
 * redirects, sse, retries) inside the session as the head arrives, and the session gathers the
 * body itself when they leave it alone: such a call costs what a call on a kernel with only h2
 * and h2c costs (counted in promises, which does not depend on timing). Where a tap acts (a
 * redirect, a decoded or parsed body, a retry, an error) or the body fails after the head, the
 * call ends as it did when the taps ran after `dispatch`. The peer is a bare node:http2 server.
 */
import http2 from 'node:http2';
import { gzipSync } from 'node:zlib';
import { promisesPerCall } from '../../helpers/promises.js';
import { describe, expect, it } from 'vitest';
import * as HTTP from '../../../index.js';
import { CanceledError, Client, createKernel, definePlugin, ResponseTooLargeError, TimeoutError, type AnyPlugin, type CallOptions } from '../../../kernel/index.js';
import { CookieJar, getJarCookies } from '../../../plugins/cookies/index.js';
import { H2StreamResetError } from '../../../plugins/h2/index.js';
import { presets } from '../../../plugins/index.js';
import { closeAfter, closeKernelAfter } from '../../helpers/cleanup.js';
import { h2Client, nodeServer, waitFor } from '../../helpers/h2.js';

/** A client on a fresh default-preset kernel (plus `extra` plugins), h2c by prior knowledge. */
async function presetClient(options: CallOptions = {}, extra: AnyPlugin[] = []): Promise<Client> {
  const kernel = closeKernelAfter(
    await createKernel()
      .register([...presets.defaults, ...extra])
      .ready(),
  );
  return closeAfter(new Client({ kernel, http2PriorKnowledge: true, retryDelayScale: 1, ...options }));
}

function text(body: unknown): string {
  return Buffer.from(body as Uint8Array).toString();
}

describe('head taps on the HTTP/2 client', () => {
  it('a default-preset call whose taps have nothing to do makes no more promises than a call on h2 and h2c alone, with or without options of its own', async () => {
    const { port } = await nodeServer((st) => {
      st.respond({ ':status': 200, 'content-length': '5' });
      st.end('hello');
    });
    const url = `http://127.0.0.1:${port}/`;
    const minimal = await h2Client({ http2PriorKnowledge: true });
    const preset = await presetClient();
    const own = { http2PriorKnowledge: true };
    const m = await promisesPerCall(() => minimal.get(url));
    expect(await promisesPerCall(() => preset.get(url))).toBeLessThanOrEqual(m);
    expect(await promisesPerCall(() => preset.get(url, own))).toBeLessThanOrEqual(m);
    expect(text((await preset.get(url, own)).body)).toBe('hello');
  });

  it('the top-level get makes no more promises than the default client’s own get', async () => {
    const { port } = await nodeServer((st) => {
      st.respond({ ':status': 200, 'content-length': '5' });
      st.end('hello');
    });
    const url = `http://127.0.0.1:${port}/`;
    const own = { http2PriorKnowledge: true };
    const client = closeAfter(HTTP.getDefaultClient());
    const direct = await promisesPerCall(() => client.get(url, own));
    expect(await promisesPerCall(() => HTTP.get(url, own))).toBeLessThanOrEqual(direct);
  });

  it('a redirect is followed with the cookie its head set, and a gzip body is decoded', async () => {
    let streams = 0;
    const { port } = await nodeServer((st, h) => {
      streams++;
      const path = String(h[':path']);
      if (path === '/from') {
        st.respond({ ':status': 302, location: '/to', 'set-cookie': 'a=1; Path=/', 'content-length': '4' });
        st.end('gone');
      } else {
        st.respond({ ':status': 200, 'content-encoding': 'gzip', 'x-cookie': String(h.cookie ?? '') });
        st.end(gzipSync('decoded'));
      }
    });
    const c = await presetClient({ cookiejar: new CookieJar() });
    const res = await c.get(`http://127.0.0.1:${port}/from`);
    expect(res.status).toBe(200);
    expect(res.url).toBe(`http://127.0.0.1:${port}/to`);
    expect(res.headers.get('X-Cookie')).toBe('a=1');
    expect(res.headers.has('Content-Encoding')).toBe(false);
    expect(text(res.body)).toBe('decoded');
    expect(streams).toBe(2);
  });

  it('a 503 is retried and the retry’s body is the answer; trailers of a gathered body reach the response', async () => {
    let streams = 0;
    const { port } = await nodeServer((st) => {
      streams++;
      if (streams === 1) {
        st.respond({ ':status': 503, 'content-length': '4' });
        st.end('busy');
        return;
      }
      st.respond({ ':status': 200 }, { waitForTrailers: true });
      st.on('wantTrailers', () => st.sendTrailers({ 'x-sum': '42' }));
      st.end('second');
    });
    const c = await presetClient();
    const res = await c.get(`http://127.0.0.1:${port}/`);
    expect(res.status).toBe(200);
    expect(text(res.body)).toBe('second');
    expect(res.trailers.get('X-Sum')).toBe('42');
    expect(streams).toBe(2);
  });

  it('an sseCallback gets the events of an HTTP/2 event stream', async () => {
    const { port } = await nodeServer((st) => {
      st.respond({ ':status': 200, 'content-type': 'text/event-stream' });
      st.end('data: one\n\ndata: two\n\n');
    });
    const c = await presetClient();
    const got: string[] = [];
    await c.get(`http://127.0.0.1:${port}/`, { sseCallback: (ev) => void got.push(ev.data) });
    expect(got).toEqual(['one', 'two']);
  });

  it('a declared length past maxResponseBytes fails after the taps saw the head (its cookie is stored); so does a body that grows past it', async () => {
    const { port } = await nodeServer((st, h) => {
      if (h[':path'] === '/declared') {
        st.respond({ ':status': 200, 'content-length': '100', 'set-cookie': 'big=1; Path=/' });
        st.end('x'.repeat(100));
      } else {
        st.respond({ ':status': 200 });
        st.end('y'.repeat(100));
      }
    });
    const jar = new CookieJar();
    const c = await presetClient({ cookiejar: jar, maxResponseBytes: 10 });
    const e1 = await c.get(`http://127.0.0.1:${port}/declared`).catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(ResponseTooLargeError);
    expect((e1 as ResponseTooLargeError).contentLength).toBe(100);
    const e2 = await c.get(`http://127.0.0.1:${port}/grows`).catch((e: unknown) => e);
    expect(e2).toBeInstanceOf(ResponseTooLargeError);
    // The taps saw the refused head: its cookie is in the jar.
    expect(getJarCookies(jar, 'http:', '127.0.0.1', '/').map((k) => `${k.name}=${k.value}`)).toEqual(['big=1']);
    const res = await c.get(`http://127.0.0.1:${port}/declared`, { maxResponseBytes: 0 });
    expect(text(res.body)).toBe('x'.repeat(100));
  });

  it('a stream reset after the head fails the call once, not retried, as a body that failed while read', async () => {
    let streams = 0;
    const { port } = await nodeServer((st) => {
      streams++;
      st.on('error', () => undefined);
      st.respond({ ':status': 200, 'content-length': '100' }, { waitForTrailers: true });
      st.write('partial', () => {
        if (!st.destroyed) st.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      });
    });
    const c = await presetClient();
    const err = await c.get(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(H2StreamResetError);
    expect((err as H2StreamResetError).errorCode).toBe(http2.constants.NGHTTP2_INTERNAL_ERROR);
    expect(streams).toBe(1);
  });

  it('a call canceled or timed out while its body is gathered fails with that, and its stream is reset', async () => {
    let resets = 0;
    const { port } = await nodeServer((st) => {
      st.on('error', () => undefined);
      st.on('close', () => {
        if (st.rstCode === http2.constants.NGHTTP2_CANCEL) resets++;
      });
      st.respond({ ':status': 200, 'content-length': '100' });
      st.write('partial');
    });
    // A tap with nothing to do that says when a head was shown to the taps (the body is being gathered then).
    let seen: () => void = () => undefined;
    const watcher = definePlugin({
      name: 'watcher',
      register(kernel) {
        kernel.hooks.client.onResponseHead.tap('watcher', () => seen());
      },
    });
    const c = await presetClient({}, [watcher]);
    const ac = new AbortController();
    const head = new Promise<void>((r) => (seen = r));
    const canceled = c.get(`http://127.0.0.1:${port}/`, { signal: ac.signal }).catch((e: unknown) => e);
    await head;
    ac.abort();
    expect(await canceled).toBeInstanceOf(CanceledError);
    const timedOut = await c.get(`http://127.0.0.1:${port}/`, { requestTimeout: 100 }).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(TimeoutError);
    await waitFor(() => resets === 2);
  });

  it('an error thrown by an onResponseHead tap or an onRetry tap fails the call with it', async () => {
    const { port } = await nodeServer((st, h) => {
      st.respond({ ':status': 200, 'x-throw': String(h[':path']).slice(1), 'content-length': '2' });
      st.end('ok');
    });
    const thrower = definePlugin({
      name: 'thrower',
      register(kernel) {
        kernel.hooks.client.onResponseHead.tap('thrower', (res) => {
          if (res.headers.get('X-Throw') === 'head') throw new Error('head tap threw');
        });
        kernel.hooks.client.onRetry.tap('thrower', (state) => {
          if (state.response?.headers.get('X-Throw') === 'retry') throw new Error('retry tap threw');
          return undefined;
        });
      },
    });
    const c = await presetClient({}, [thrower]);
    await expect(c.get(`http://127.0.0.1:${port}/head`)).rejects.toThrow('head tap threw');
    await expect(c.get(`http://127.0.0.1:${port}/retry`)).rejects.toThrow('retry tap threw');
    expect(text((await c.get(`http://127.0.0.1:${port}/none`)).body)).toBe('ok');
  });
});
