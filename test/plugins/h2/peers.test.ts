/**
 * nghttp2's own tools against the server: `nghttp -nv` shows the SETTINGS and window updates
 * the server sends (http2Settings, maxConcurrentStreams, maxHeaderBytes), and `h2load` runs 10
 * connections × 100 concurrent streams to completion, over h2c and TLS.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, Response } from '../../../kernel/index.js';
import { HTTP2Settings } from '../../../plugins/h2/index.js';
import { run, startServer } from '../../helpers/h2.js';

const NGHTTP = '/usr/bin/nghttp';
const H2LOAD = '/usr/bin/h2load';

describe('HTTP2Settings', () => {
  it('checks the reference bounds', () => {
    const d = new HTTP2Settings();
    expect([d.initialWindowSize, d.connectionWindowSize]).toEqual([65535, 65535]);
    expect(new HTTP2Settings({ initialWindowSize: 1, connectionWindowSize: 2 ** 31 - 1 }).connectionWindowSize).toBe(2 ** 31 - 1);
    expect(() => new HTTP2Settings({ initialWindowSize: 0 })).toThrow(ArgumentError);
    expect(() => new HTTP2Settings({ initialWindowSize: 2 ** 31 })).toThrow(ArgumentError);
    expect(() => new HTTP2Settings({ connectionWindowSize: 65534 })).toThrow(ArgumentError);
    expect(() => new HTTP2Settings({ initialWindowSize: 1.5 })).toThrow(ArgumentError);
    expect(() => new HTTP2Settings({ windowSize: 5 } as never)).toThrow(ArgumentError);
  });

  it('serve() refuses invalid http2Settings and maxConcurrentStreams up front', async () => {
    await expect(startServer(() => new Response(200), { http2Settings: { initialWindowSize: 0 } })).rejects.toThrow(ArgumentError);
    await expect(startServer(() => new Response(200), { maxConcurrentStreams: -1 })).rejects.toThrow(ArgumentError);
  });
});

describe('nghttp -nv', () => {
  it('sees the negotiated settings and window sizes', async () => {
    const { port } = await startServer(() => new Response(200, 'x'.repeat(70000)), {
      maxConcurrentStreams: 7,
      maxHeaderBytes: 32768,
      http2Settings: new HTTP2Settings({ initialWindowSize: 1 << 20, connectionWindowSize: 4 << 20 }),
    });
    const r = await run(NGHTTP, ['-nv', `http://127.0.0.1:${port}/`]);
    expect(r.code).toBe(0);
    const recvSettings = r.stdout.slice(r.stdout.indexOf('recv SETTINGS'));
    expect(recvSettings).toContain('SETTINGS_MAX_CONCURRENT_STREAMS(0x03):7');
    expect(recvSettings).toContain('SETTINGS_INITIAL_WINDOW_SIZE(0x04):1048576');
    expect(recvSettings).toContain('SETTINGS_MAX_HEADER_LIST_SIZE(0x06):32768');
    // The connection window grows from 65535 to 4 MiB with one WINDOW_UPDATE on stream 0.
    expect(r.stdout).toMatch(/recv WINDOW_UPDATE frame <length=4, flags=0x00, stream_id=0>\s+\(window_size_increment=4128769\)/);
    expect(r.stdout).toMatch(/recv DATA frame <length=\d+, flags=0x01/);
  });

  it('sees the defaults: 100 streams, 65535-byte windows', async () => {
    const { port } = await startServer(() => new Response(200, 'ok'));
    const r = await run(NGHTTP, ['-nv', `http://127.0.0.1:${port}/`]);
    const recvSettings = r.stdout.slice(r.stdout.indexOf('recv SETTINGS'));
    expect(recvSettings).toContain('SETTINGS_MAX_CONCURRENT_STREAMS(0x03):100');
    expect(recvSettings).toMatch(/SETTINGS_INITIAL_WINDOW_SIZE\(0x04\):65535\]/);
    expect(r.stdout).not.toMatch(/recv WINDOW_UPDATE frame <length=4, flags=0x00, stream_id=0>/);
  });
});

describe('h2load -c 10 -m 100', () => {
  const check = (out: string): void => {
    expect(out).toMatch(/requests: 3000 total, 3000 started, 3000 done, 3000 succeeded, 0 failed, 0 errored, 0 timeout/);
    expect(out).toMatch(/status codes: 3000 2xx/);
  };

  it('runs to completion without errors over h2c', async () => {
    const { port } = await startServer(() => new Response(200, 'hello'));
    const r = await run(H2LOAD, ['-c', '10', '-m', '100', '-n', '3000', `http://127.0.0.1:${port}/`], 30_000);
    check(r.stdout);
  });

  it('runs to completion without errors over TLS', async () => {
    const { port } = await startServer(() => new Response(200, 'hello'), { secure: true });
    const r = await run(H2LOAD, ['-c', '10', '-m', '100', '-n', '3000', `https://127.0.0.1:${port}/`], 30_000);
    expect(r.stdout).toContain('Application protocol: h2');
    check(r.stdout);
  });
});
