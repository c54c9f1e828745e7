/**
 * A script that makes its requests and ends exits on its own, as it does with `fetch`: idle
 * pooled connections (HTTP/1 sockets, HTTP/2 sessions, connections through a proxy) do not
 * keep the process alive, while a request in flight does. Each test runs a user's script
 * (test/interop/child/get.ts) as its own process against servers that keep connections open
 * for 75 s (nginx's default `keepalive_timeout`): nginx from Debian (HTTP/1.1, and HTTP/2 over
 * TLS), squid from Debian in front of it, and the project's own server (h2c, a slow handler).
 */
import { spawn } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as HTTP from '../../index.js';
import { selfSignedCertificate } from '../../tls/self-signed.js';
import { forceCloseAfter, killAfter, track } from '../helpers/cleanup.js';
import { startSquid } from '../helpers/proxies.js';
import { cleanEnv, nginxHttpCommon, nginxPreamble, startNginx, stopPeer, tempDir, type Peer } from '../helpers/peers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./child/get.ts', import.meta.url));
/** How long the script may take to exit after its last line: far below the servers' 75 s. */
const EXIT_WITHIN_MS = 8000;
/** How long it may take to print its first line (loading the library through tsx on a busy machine). */
const START_WITHIN_MS = 15_000;
const cert = selfSignedCertificate({ hosts: ['origin.test', 'localhost', '127.0.0.1'] });

let dir = '';
let nginx: Peer | null = null;
let plain = 0;
let secure = 0;

beforeAll(async () => {
  dir = await tempDir('swy-exit-');
  await mkdir(join(dir, 'tmp'), { mode: 0o755 });
  await writeFile(join(dir, 'cert.pem'), cert.cert);
  await writeFile(join(dir, 'key.pem'), cert.key);
  const started = await startNginx(
    dir,
    2,
    ([p, s]) => `
${nginxPreamble(dir)}
http {${nginxHttpCommon(dir)}
  keepalive_timeout 75s;
  server {
    listen 127.0.0.1:${p};
    location = /conn { default_type text/plain; return 200 "$server_protocol $connection_requests"; }
  }
  server {
    listen 127.0.0.1:${s} ssl http2;
    ssl_certificate ${dir}/cert.pem;
    ssl_certificate_key ${dir}/key.pem;
    location = /conn { default_type text/plain; return 200 "$server_protocol $connection"; }
  }
}
`,
  );
  nginx = started.peer;
  [plain, secure] = started.ports as [number, number];
});

afterAll(async () => {
  await stopPeer(nginx);
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

interface Run {
  /** The script's stdout lines. */
  lines: string[];
  /** Its exit code. */
  code: number | string;
  /** Milliseconds from its last output to its exit. */
  lingered: number;
}

/**
 * Runs the script on `urls` (call options `options`) and resolves once it exits; rejects when it
 * is still running {@link EXIT_WITHIN_MS} after its last output (it is killed then).
 */
function runScript(urls: string[], options: Record<string, unknown> = {}): Promise<Run> {
  const env = { ...cleanEnv(), SWY_OPTIONS: JSON.stringify(options), NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') };
  const child = killAfter(spawn(process.execPath, ['--import', 'tsx', SCRIPT, ...urls], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  let err = '';
  let last = performance.now();
  return new Promise<Run>((resolve, reject) => {
    let timer: NodeJS.Timeout | null = null;
    const arm = (ms: number): void => {
      if (timer !== null) clearTimeout(timer);
      timer = track(
        setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`the script did not exit within ${ms} ms of its last output; stdout: ${JSON.stringify(out)}, stderr: ${err}`));
        }, ms),
      );
    };
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      last = performance.now();
      arm(EXIT_WITHIN_MS);
    });
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.once('exit', (code, signal) => {
      if (timer !== null) clearTimeout(timer);
      const lines = out.split('\n').filter((l) => l !== '');
      if (code !== 0) reject(new Error(`the script exited with ${code ?? signal}; stdout: ${JSON.stringify(out)}, stderr: ${err}`));
      else resolve({ lines, code: code ?? signal ?? -1, lingered: performance.now() - last });
    });
    // No output at all counts the same (a script that hangs before printing).
    arm(START_WITHIN_MS);
  });
}

describe('a script exits once its requests are done (idle pooled connections do not hold it)', { timeout: 30_000 }, () => {
  it('HTTP/1.1 to nginx (keepalive_timeout 75s): two requests on one pooled connection, then exit', async () => {
    const run = await runScript([`http://127.0.0.1:${plain}/conn`, `http://127.0.0.1:${plain}/conn`]);
    // nginx's $connection_requests: the second request reused the pooled (unref'd, then ref'd) connection.
    expect(run.lines).toEqual(['200 HTTP/1.1 1', '200 HTTP/1.1 2']);
    expect(run.lingered).toBeLessThan(EXIT_WITHIN_MS);
  });

  it('HTTP/2 over TLS to nginx (ALPN h2): two requests on one session, then exit', async () => {
    const run = await runScript([`https://127.0.0.1:${secure}/conn`, `https://127.0.0.1:${secure}/conn`]);
    expect(run.lines).toHaveLength(2);
    expect(run.lines[0]).toMatch(/^200 HTTP\/2\.0 \d+$/);
    // The same nginx connection: the second stream went on the pooled session.
    expect(run.lines[1]).toBe(run.lines[0]);
  });

  it('h2c (prior knowledge) to the project server with a 75 s idle timeout, then exit', async () => {
    const server = forceCloseAfter(await HTTP.serve((req) => new HTTP.Response(200, `${req.protoMajor} ${req.target}`), { host: '127.0.0.1', port: 0, idleTimeout: 75_000 }));
    const run = await runScript([`http://127.0.0.1:${server.port}/a`, `http://127.0.0.1:${server.port}/b`], { http2PriorKnowledge: true });
    expect(run.lines).toEqual(['200 2 /a', '200 2 /b']);
  });

  it('through squid: plain http forwarded and https (h2) tunnelled with CONNECT, then exit', async () => {
    const squid = await startSquid({ hosts: { 'origin.test': '127.0.0.1' } });
    const run = await runScript([`http://origin.test:${plain}/conn`, `https://origin.test:${secure}/conn`, `http://origin.test:${plain}/conn`], { proxy: squid.url });
    expect(run.lines).toHaveLength(3);
    expect(run.lines[0]).toMatch(/^200 HTTP\/1\.1 \d+$/);
    expect(run.lines[1]).toMatch(/^200 HTTP\/2\.0 \d+$/);
    expect(run.lines[2]).toMatch(/^200 HTTP\/1\.1 \d+$/);
    await squid.waitLog(/CONNECT origin\.test/);
  });
});

describe('a request in flight keeps the script alive', { timeout: 30_000 }, () => {
  /** A server that answers `/slow` only after a while (nothing else of the script waits meanwhile). */
  async function slowServer(): Promise<number> {
    const server = await HTTP.serve(
      (req) => {
        if (req.target !== '/slow') return new HTTP.Response(200, 'fast');
        return new Promise<HTTP.Response>((resolve) => track(setTimeout(() => resolve(new HTTP.Response(200, 'slow')), 500)));
      },
      { host: '127.0.0.1', port: 0, idleTimeout: 75_000 },
    );
    forceCloseAfter(server);
    return server.port;
  }

  it('HTTP/1.1: a slow response on a reused pooled connection is awaited', async () => {
    const port = await slowServer();
    const run = await runScript([`http://127.0.0.1:${port}/fast`, `http://127.0.0.1:${port}/slow`]);
    expect(run.lines).toEqual(['200 fast', '200 slow']);
  });

  it('HTTP/2 (h2c): a slow stream on a session that was idle is awaited', async () => {
    const port = await slowServer();
    const run = await runScript([`http://127.0.0.1:${port}/fast`, `http://127.0.0.1:${port}/slow`], { http2PriorKnowledge: true });
    expect(run.lines).toEqual(['200 fast', '200 slow']);
  });
});
