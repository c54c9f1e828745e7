/**
 * Helpers of the interoperability tests: free ports, temp directories, starting a peer
 * nobody here wrote (a Debian binary) as a child process and waiting until it accepts
 * connections, and stopping it.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A free TCP port on 127.0.0.1 (bound and released; the caller binds it next). */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** A new world-readable temp directory (peers may run their workers as another user). */
export async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await chmod(dir, 0o755);
  return dir;
}

/** The first of `paths` that exists, else throws naming the Debian package that provides it. */
export function findBinary(paths: string[], pkg: string): string {
  for (const p of paths) if (existsSync(p)) return p;
  throw new Error(`${paths.join(' or ')} not found: install the Debian package ${pkg} (.ci/run does)`);
}

/** A started child process with its collected stderr. */
export interface Peer {
  child: ChildProcess;
  stderr: () => string;
  stdout: () => string;
  /** Resolves with the exit code (or signal) once the process exited. */
  exited: Promise<number | string>;
}

/** Spawns `cmd args` and collects its output. */
export function startPeer(cmd: string, args: string[], options: SpawnOptions = {}): Peer {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout?.on('data', (c: Buffer) => out.push(c));
  child.stderr?.on('data', (c: Buffer) => err.push(c));
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1));
    child.once('error', () => resolve(-1));
  });
  return { child, exited, stderr: () => Buffer.concat(err).toString(), stdout: () => Buffer.concat(out).toString() };
}

/**
 * Resolves once 127.0.0.1:`port` accepts a connection; rejects when `peer` exits first or
 * `ms` pass. Each refused attempt is retried on the next event-loop turn.
 */
export async function waitListening(port: number, peer: Peer, ms = 5000): Promise<void> {
  const start = performance.now();
  let exited: number | string | null = null;
  void peer.exited.then((c) => {
    exited = c;
  });
  for (;;) {
    if (exited !== null) throw new Error(`the peer exited (${exited}) before listening on ${port}: ${peer.stderr()}`);
    if (performance.now() - start > ms) throw new Error(`the peer did not listen on ${port} within ${ms} ms: ${peer.stderr()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => {
        s.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    await new Promise<void>((r) => setImmediate(r));
  }
}

/** Stops a peer: SIGTERM, then SIGKILL when it has not exited within `ms`. */
export async function stopPeer(peer: Peer | null, ms = 3000): Promise<void> {
  if (peer === null) return;
  const c = peer.child;
  if (c.exitCode !== null || c.signalCode !== null) return;
  c.kill('SIGTERM');
  let t: NodeJS.Timeout | undefined;
  const killed = await Promise.race([peer.exited.then(() => true), new Promise<boolean>((r) => (t = setTimeout(() => r(false), ms)))]);
  clearTimeout(t);
  if (!killed) {
    c.kill('SIGKILL');
    await peer.exited;
  }
}

/** Environment without proxy variables, for child processes. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/_proxy$/i.test(k)) env[k] = v;
  return env;
}

/** The part of an nginx.conf every test shares: foreground, one worker, temp paths under `dir`. */
export function nginxPreamble(dir: string): string {
  return `
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }`;
}

/** The `http { … }` lines every test shares: no access log, temp paths under `dir`, basic types. */
export function nginxHttpCommon(dir: string): string {
  return `
  access_log off;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  types { text/html html; text/plain txt; application/octet-stream bin; }
  default_type application/octet-stream;`;
}

/**
 * Starts nginx on `count` free ports with the config `config(ports)` written to `dir`
 * (which holds `tmp/`), retrying when a probed port is taken before nginx binds it.
 */
export function startNginx(dir: string, count: number, config: (ports: number[]) => string): Promise<{ peer: Peer; ports: number[] }> {
  const nginx = findBinary(['/usr/sbin/nginx', '/usr/bin/nginx'], 'nginx');
  return startDaemon(nginx, (file) => ['-e', 'stderr', '-p', dir, '-c', file, '-g', 'daemon off;'], join(dir, 'nginx.conf'), count, config);
}

/**
 * Starts HAProxy in the foreground on `count` free ports with the config `config(ports)`
 * written to `dir`, retrying when a probed port is taken before HAProxy binds it.
 */
export function startHaproxy(dir: string, count: number, config: (ports: number[]) => string): Promise<{ peer: Peer; ports: number[] }> {
  const haproxy = findBinary(['/usr/sbin/haproxy', '/usr/bin/haproxy'], 'haproxy');
  return startDaemon(haproxy, (file) => ['-db', '-f', file], join(dir, 'haproxy.cfg'), count, config);
}

/**
 * Runs `binary` in the foreground on `count` free ports, its config `config(ports)` written to
 * `file` first; probing a port and the daemon binding it race with other processes, so a
 * start that does not listen on every port is tried again with new ones (three times).
 */
async function startDaemon(binary: string, argv: (file: string) => string[], file: string, count: number, config: (ports: number[]) => string): Promise<{ peer: Peer; ports: number[] }> {
  for (let attempt = 1; ; attempt++) {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) ports.push(await freePort());
    await writeFile(file, config(ports));
    const p = startPeer(binary, argv(file), { env: cleanEnv() });
    try {
      for (const port of ports) await waitListening(port, p);
      return { peer: p, ports };
    } catch (err) {
      await stopPeer(p);
      if (attempt >= 3) throw err;
    }
  }
}

/**
 * nginx serving HTTP/2 over TLS (certificate `tls`) with gzip for text on a free port, started
 * with {@link startNginx}: `files` are written under its root, `locations` (location blocks)
 * go before the root's own. The caller stops `peer` and removes `dir`.
 */
export async function startNginxH2(
  prefix: string,
  tls: { cert: string; key: string },
  files: Record<string, string | Uint8Array>,
  locations: string,
): Promise<{ peer: Peer; dir: string; origin: string }> {
  const dir = await tempDir(prefix);
  await mkdir(join(dir, 'www'), { mode: 0o755 });
  await mkdir(join(dir, 'tmp'), { mode: 0o755 });
  for (const [name, data] of Object.entries(files)) await writeFile(join(dir, 'www', name), data);
  await writeFile(join(dir, 'cert.pem'), tls.cert);
  await writeFile(join(dir, 'key.pem'), tls.key);
  const { peer, ports } = await startNginx(
    dir,
    1,
    ([port]) => `${nginxPreamble(dir)}
http {${nginxHttpCommon(dir)}
  gzip on;
  gzip_types text/plain;
  server {
    listen 127.0.0.1:${port} ssl http2;
    ssl_certificate ${dir}/cert.pem;
    ssl_certificate_key ${dir}/key.pem;
    root ${dir}/www;
${locations}
    location / { }
  }
}
`,
  );
  return { peer, dir, origin: `https://127.0.0.1:${ports[0]}` };
}
