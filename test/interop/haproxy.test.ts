/**
 * switchyard behind HAProxy from Debian (/usr/sbin/haproxy), started by the test in the
 * foreground with a temp config: `send-proxy` (PROXY v1) and `send-proxy-v2` to the backend
 * over HTTP/1.1, h2c (`proto h2`) and TLS (h2 and HTTP/1.1 by ALPN), and `option forwardfor`
 * to a server with `trustProxy`. The client connects from 127.0.0.3, HAProxy to the backends
 * from 127.0.0.1, so the address a handler sees says whose it is.
 */
import { rm } from 'node:fs/promises';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKernel, Response, type Kernel } from '../../kernel/index.js';
import { clientOf, presets, proxyProtocol } from '../../plugins/index.js';
import { selfSignedCertificate } from '../../tls/self-signed.js';
import { startHaproxy, stopPeer, tempDir, type Peer } from '../helpers/peers.js';
import { RawClient, within, type ParsedResponse } from '../helpers/server.js';

const CERT = selfSignedCertificate({ hosts: ['localhost', '127.0.0.1'] });
const CLIENT_ADDRESS = '127.0.0.3';

let dir = '';
let haproxy: Peer | null = null;
let kernel: Kernel | null = null;
const front: Record<string, number> = {};

function config(ports: number[], backends: { plain: number; tls: number; forwarded: number }): string {
  const names = ['v1', 'v2', 'h2', 'tlsh2', 'tlsh1', 'fwd'];
  names.forEach((n, i) => (front[n] = ports[i]!));
  const server: Record<string, string> = {
    v1: `127.0.0.1:${backends.plain} send-proxy`,
    v2: `127.0.0.1:${backends.plain} send-proxy-v2`,
    h2: `127.0.0.1:${backends.plain} send-proxy-v2 proto h2`,
    tlsh2: `127.0.0.1:${backends.tls} send-proxy-v2 ssl verify none alpn h2`,
    tlsh1: `127.0.0.1:${backends.tls} send-proxy ssl verify none alpn http/1.1`,
    fwd: `127.0.0.1:${backends.forwarded}`,
  };
  return `
global
  maxconn 200
defaults
  mode http
  timeout connect 5s
  timeout client 10s
  timeout server 10s
${names
  .map(
    (n) => `
frontend fe_${n}
  bind 127.0.0.1:${front[n]}
${n === 'fwd' ? '  option forwardfor\n  http-request set-header X-Forwarded-Proto https\n' : ''}  default_backend be_${n}
backend be_${n}
  server s ${server[n]}
`,
  )
  .join('')}`;
}

beforeAll(async () => {
  dir = await tempDir('swy-haproxy-');
  kernel = await createKernel()
    .register([...presets.defaults, proxyProtocol])
    .ready();
  const answer = async (stream: { protocol: string; peerAddr(): object; closeWrite(b: string): Promise<void> }): Promise<void> => {
    await stream.closeWrite(`${stream.protocol} ${String(stream.peerAddr())}`);
  };
  const plain = await kernel.listen(answer, { host: '127.0.0.1', port: 0, proxyProtocol: ['127.0.0.1'] });
  const secure = await kernel.listen(answer, { host: '127.0.0.1', port: 0, proxyProtocol: ['127.0.0.1'], tls: { key: CERT.key, cert: CERT.cert } });
  const forwarded = await kernel.serve((req) => new Response(200, JSON.stringify(clientOf(req))), { host: '127.0.0.1', port: 0, trustProxy: ['127.0.0.1'] });
  const started = await startHaproxy(dir, 6, (ports) => config(ports, { plain: plain.port, tls: secure.port, forwarded: forwarded.port }));
  haproxy = started.peer;
});

afterAll(async () => {
  await stopPeer(haproxy);
  await kernel?.close();
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

/** One GET through the frontend `name`, from {@link CLIENT_ADDRESS}; the response and the client's port. */
async function get(name: string, extra = ''): Promise<{ res: ParsedResponse; port: number }> {
  const socket = net.connect({ host: '127.0.0.1', port: front[name]!, localAddress: CLIENT_ADDRESS });
  const c = new RawClient(socket);
  try {
    await within(new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject)), 3000, 'connect to HAProxy');
    await c.write(`GET / HTTP/1.1\r\nHost: app.example\r\n${extra}Connection: close\r\n\r\n`);
    const res = await c.response();
    return { res, port: socket.localPort! };
  } finally {
    c.destroy();
  }
}

describe('behind HAProxy with the PROXY protocol', () => {
  it.each([
    ['send-proxy (v1), HTTP/1.1', 'v1', 'http/1.1'],
    ['send-proxy-v2, HTTP/1.1', 'v2', 'http/1.1'],
    ['send-proxy-v2, h2 (proto h2)', 'h2', 'h2'],
    ['send-proxy-v2 over TLS, h2 by ALPN', 'tlsh2', 'h2'],
    ['send-proxy over TLS, HTTP/1.1 by ALPN', 'tlsh1', 'http/1.1'],
  ])('%s: peerAddr() is the client, not HAProxy', async (_what, name, protocol) => {
    const { res, port } = await get(name);
    expect(res.status).toBe(200);
    expect(res.text).toBe(`${protocol} ${CLIENT_ADDRESS}:${port}`);
  });
});

describe('behind HAProxy with option forwardfor', () => {
  it('clientOf() is the client HAProxy saw, with the scheme HAProxy set', async () => {
    const { res } = await get('fwd');
    expect(JSON.parse(res.text)).toEqual({ address: CLIENT_ADDRESS, addresses: ['127.0.0.1', CLIENT_ADDRESS], scheme: 'https', host: 'app.example' });
  });

  it('what a client forges in X-Forwarded-For and -Proto stays beyond the trusted proxy', async () => {
    // HAProxy adds its own X-Forwarded-For line after the forged one, and overwrites -Proto.
    const { res } = await get('fwd', 'X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Proto: gopher\r\n');
    expect(JSON.parse(res.text)).toMatchObject({ address: CLIENT_ADDRESS, scheme: 'https' });
  });
});
