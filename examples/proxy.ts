/**
 * Plugin `proxy`: requests go through an HTTP proxy given as a `ProxyConfig` (or a URL string,
 * or `proxyFromEnvironment()` for HTTP_PROXY/HTTPS_PROXY/NO_PROXY). Plain `http:` is forwarded
 * (absolute-form request line), `https:` is tunneled with CONNECT and TLS runs end to end;
 * `noProxy` hosts and loopback addresses go direct. SOCKS5 works the same with `socks5://`.
 * Starts a toy proxy (node:net, below) and two servers on 127.0.0.1, prints what the proxy saw.
 *
 *   node --import tsx examples/proxy.ts
 */
import net from 'node:net';
import * as HTTP from '../index.js';

// A toy proxy (no error handling worth the name): it resolves every host name to 127.0.0.1,
// so `shop.test` works without DNS; the client never looks the name up itself.
const seen: string[] = [];
const toy = net.createServer((down) => {
  down.once('data', (first: Buffer) => {
    down.pause();
    const [method = '', target = ''] = first.toString('latin1', 0, first.indexOf('\r\n')).split(' ');
    seen.push(`${method} ${target}`);
    const authority = method === 'CONNECT' ? target : new URL(target).host;
    const up = net.connect(Number(authority.slice(authority.lastIndexOf(':') + 1)), '127.0.0.1', () => {
      if (method === 'CONNECT') down.write('HTTP/1.1 200 Connection established\r\n\r\n');
      else up.write(first); // forward mode: origins accept the absolute-form request line
      down.pipe(up).pipe(down);
    });
    up.on('error', () => down.destroy());
    down.on('error', () => up.destroy());
  });
});
await new Promise<void>((resolve) => toy.listen(0, '127.0.0.1', resolve));
const proxyUrl = `http://127.0.0.1:${(toy.address() as net.AddressInfo).port}`;

const handler = (req: HTTP.Request): HTTP.Response => new HTTP.Response(200, `origin got ${req.method} ${req.target}`);
const cert = HTTP.selfSignedCertificate({ hosts: ['shop.test'] });
const plain = await HTTP.serve(handler, { host: '127.0.0.1', port: 0 });
const secure = await HTTP.serve(handler, { host: '127.0.0.1', port: 0, tls: { key: cert.key, cert: cert.cert } });

const config = new HTTP.ProxyConfig(proxyUrl, { noProxy: 'internal.test, .corp.example' });
const client = new HTTP.Client({ kernel: HTTP.getDefaultKernel(), proxy: config, tlsConfig: { ca: cert.cert } });

console.log((await client.get(`http://shop.test:${plain.port}/cart`)).text());
console.log((await client.get(`https://shop.test:${secure.port}/checkout`)).text());
console.log((await client.get(`http://127.0.0.1:${plain.port}/direct`)).text(), '(loopback: never proxied)');
console.log(`proxy saw: ${seen.join(' | ')}`);
console.log(
  `noProxy: internal.test -> ${String(config.proxyFor('http://internal.test/'))}, a.corp.example -> ${String(config.proxyFor('https://a.corp.example/'))}, shop.test -> ${config.proxyFor('http://shop.test/')?.href}`,
);

client.close();
await Promise.all([plain.close(), secure.close()]);
await new Promise((resolve) => toy.close(resolve));
