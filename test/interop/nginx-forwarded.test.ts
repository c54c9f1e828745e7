/**
 * switchyard with `trustProxy` behind nginx from Debian (/usr/sbin/nginx) as a reverse proxy:
 * `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for` (and `-Proto`, `-Host`) to one
 * server, `proxy_set_header Forwarded …` to another with `forwardedHeaders: 'forwarded'`. The
 * client connects from 127.0.0.3, nginx to the servers from 127.0.0.1 (the trusted proxy).
 */
import { mkdir, rm } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKernel, Response, type Kernel } from '../../kernel/index.js';
import { clientOf, presets, proxyProtocol, type ForwardedClient } from '../../plugins/index.js';
import { nginxHttpCommon, nginxPreamble, startNginx, stopPeer, tempDir, type Peer } from '../helpers/peers.js';
import { RawClient, within } from '../helpers/server.js';

const CLIENT_ADDRESS = '127.0.0.3';

let dir = '';
let nginx: Peer | null = null;
let kernel: Kernel | null = null;
let xfPort = 0;
let fwdPort = 0;

beforeAll(async () => {
  dir = await tempDir('swy-nginx-fwd-');
  await mkdir(join(dir, 'tmp'), { mode: 0o755 });
  kernel = await createKernel()
    .register([...presets.defaults, proxyProtocol])
    .ready();
  const answer = (req: Parameters<typeof clientOf>[0]): Response => new Response(200, JSON.stringify(clientOf(req)));
  const xf = await kernel.serve(answer, { host: '127.0.0.1', port: 0, trustProxy: ['127.0.0.1'] });
  const fwd = await kernel.serve(answer, { host: '127.0.0.1', port: 0, trustProxy: ['127.0.0.1'], forwardedHeaders: 'forwarded' });
  const started = await startNginx(
    dir,
    2,
    ([a, b]) => `${nginxPreamble(dir)}
http {${nginxHttpCommon(dir)}
  server {
    listen 127.0.0.1:${a};
    location / {
      proxy_pass http://127.0.0.1:${xf.port};
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto https;
      proxy_set_header X-Forwarded-Host $http_host;
    }
  }
  server {
    listen 127.0.0.1:${b};
    location / {
      proxy_pass http://127.0.0.1:${fwd.port};
      proxy_set_header Forwarded "for=$remote_addr;proto=https;host=\\"$http_host\\"";
    }
  }
}
`,
  );
  nginx = started.peer;
  [xfPort, fwdPort] = started.ports as [number, number];
});

afterAll(async () => {
  await stopPeer(nginx);
  await kernel?.close();
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

async function get(port: number, extra = ''): Promise<ForwardedClient> {
  const socket = net.connect({ host: '127.0.0.1', port, localAddress: CLIENT_ADDRESS });
  const c = new RawClient(socket);
  try {
    await within(new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject)), 3000, 'connect to nginx');
    await c.write(`GET / HTTP/1.1\r\nHost: app.example:8443\r\n${extra}Connection: close\r\n\r\n`);
    const res = await c.response();
    expect(res.status).toBe(200);
    return JSON.parse(res.text) as ForwardedClient;
  } finally {
    c.destroy();
  }
}

describe('behind nginx (proxy_set_header)', () => {
  it('X-Forwarded-For/-Proto/-Host give the client, its scheme and host', async () => {
    expect(await get(xfPort)).toEqual({ address: CLIENT_ADDRESS, addresses: ['127.0.0.1', CLIENT_ADDRESS], scheme: 'https', host: 'app.example:8443' });
  });

  it('an X-Forwarded-For the client forged stays beyond the address nginx appended', async () => {
    const c = await get(xfPort, 'X-Forwarded-For: 6.6.6.6\r\n');
    expect(c).toMatchObject({ address: CLIENT_ADDRESS, addresses: ['127.0.0.1', CLIENT_ADDRESS] });
  });

  it('Forwarded set by nginx, forged ones overwritten', async () => {
    expect(await get(fwdPort, 'Forwarded: for=6.6.6.6;proto=gopher\r\n')).toEqual({ address: CLIENT_ADDRESS, addresses: ['127.0.0.1', CLIENT_ADDRESS], scheme: 'https', host: 'app.example:8443' });
  });
});
