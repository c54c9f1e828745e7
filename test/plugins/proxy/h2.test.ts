/**
 * HTTP/2 by ALPN through a proxy: the kernel runs TLS (offering h2) over the CONNECT tunnel
 * of squid and over microsocks' SOCKS5 tunnel; the h2 plugin then drives the connection, and
 * concurrent requests share it.
 */
import { describe, expect, it } from 'vitest';
import { Response, createKernel } from '../../../kernel/index.js';
import { h2 } from '../../../plugins/h2/index.js';
import { startServer } from '../../helpers/server.js';
import { startMicrosocks, startSquid } from '../../helpers/proxies.js';
import { bootKernel, certificate, makeClient, onCleanupKernel } from './setup.js';

/** An HTTP/2 (and HTTP/1.1) TLS origin answering with the protocol version it saw. */
async function h2Origin(): Promise<number> {
  const kernel = createKernel().register(h2);
  await kernel.ready();
  onCleanupKernel(kernel);
  const { port } = await startServer((req) => new Response(200, `HTTP/${req.protoMajor} ${req.target}`), {
    kernel,
    tls: { key: certificate().key, cert: certificate().cert },
  });
  return port;
}

describe('HTTP/2 through proxies', () => {
  it('over squid CONNECT: h2 by ALPN, one tunnel for concurrent requests', async () => {
    const squid = await startSquid({ hosts: { 'origin.test': '127.0.0.1' } });
    const port = await h2Origin();
    const client = await makeClient({ proxy: squid.url, tlsConfig: { ca: certificate().cert } }, await bootKernel([h2]));
    const all = await Promise.all([1, 2, 3].map((i) => client.get(`https://origin.test:${port}/h2-${i}`)));
    expect(all.map((r) => r.text())).toEqual(['HTTP/2 /h2-1', 'HTTP/2 /h2-2', 'HTTP/2 /h2-3']);
    expect(client.transport.connectionCount()).toBe(1);
    client.close();
    await squid.waitLog(new RegExp(`TCP_TUNNEL/200 .* CONNECT origin\\.test:${port} `));
    expect(squid.log().filter((l) => l.includes('CONNECT'))).toHaveLength(1);
  });

  it('over microsocks (socks5h)', async () => {
    const socks = await startMicrosocks();
    const port = await h2Origin();
    const client = await makeClient({ proxy: socks.url('socks5h'), tlsConfig: { ca: certificate().cert } }, await bootKernel([h2]));
    expect((await client.get(`https://0.0.0.0:${port}/socks-h2`)).text()).toBe('HTTP/2 /socks-h2');
    expect(await socks.waitConnected(1)).toEqual([`0.0.0.0:${port}`]);
  });

  it('httpVersion h1 keeps HTTP/1.1 through the same tunnel kind', async () => {
    const squid = await startSquid({ hosts: { 'origin.test': '127.0.0.1' } });
    const port = await h2Origin();
    const client = await makeClient({ proxy: squid.url, tlsConfig: { ca: certificate().cert } }, await bootKernel([h2]));
    expect((await client.get(`https://origin.test:${port}/one`, { httpVersion: 'h1' })).text()).toBe('HTTP/1 /one');
  });
});
