/**
 * Real proxies for the proxy tests, started per test on free loopback ports and stopped after
 * it: Debian's squid (forward and CONNECT proxy, optional basic auth through
 * basic_ncsa_auth and an htpasswd file, a hosts file so test names resolve to loopback, the
 * access log as proof) and microsocks (SOCKS5, optional user/password, its stderr
 * "connected to" lines as proof). Plus small hand-written misbehaving proxies for bad input.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onCleanup } from './server.js';

export { onCleanup };

const SQUID = '/usr/sbin/squid';
const NCSA = '/usr/lib/squid/basic_ncsa_auth';
const MICROSOCKS = '/usr/bin/microsocks';

/** A port that was free a moment ago on 127.0.0.1 (for peers that need it in their config). */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Resolves once `port` accepts a TCP connection (the peer is up), or rejects after `ms`. */
async function accepting(port: number, child: ChildProcess, what: string, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode} before accepting connections`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`${what} did not accept connections on ${port} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Stops a peer and waits for its exit (squid takes 2 s to honour SIGTERM; SIGKILL is fine for a throwaway peer). */
function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), 3000);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill(signal);
  });
}

/** A running squid. */
export interface Squid {
  /** Its port on 127.0.0.1. */
  readonly port: number;
  /** `http://[user:pass@]127.0.0.1:port`. */
  readonly url: string;
  /** The access log's lines so far. */
  log(): string[];
  /** Waits until the access log has a line matching `re` (squid logs a tunnel when it closes); returns the first. */
  waitLog(re: RegExp, count?: number): Promise<string>;
}

/** Starts squid on a free port; `hosts` maps names to addresses for squid's resolver. */
export async function startSquid(options: { auth?: { user: string; pass: string }; hosts?: Record<string, string> } = {}): Promise<Squid> {
  const dir = mkdtempSync(join(tmpdir(), 'swy-squid-'));
  // squid started as root drops to its effective user (proxy), which must write here.
  chmodSync(dir, 0o777);
  const port = await freePort();
  const hosts = Object.entries(options.hosts ?? {})
    .map(([name, ip]) => `${ip} ${name}`)
    .join('\n');
  writeFileSync(join(dir, 'hosts'), `${hosts}\n`, { mode: 0o644 });
  const conf = [
    `http_port 127.0.0.1:${port}`,
    `pid_filename ${dir}/squid.pid`,
    `cache_log ${dir}/cache.log`,
    `access_log stdio:${dir}/access.log`,
    'cache_store_log none',
    `coredump_dir ${dir}`,
    'netdb_filename none',
    'cache deny all',
    `hosts_file ${dir}/hosts`,
    // Names not in the hosts file must fail fast, not wait on a real resolver.
    'dns_nameservers 127.0.0.1',
    'dns_timeout 1 seconds',
    'shutdown_lifetime 0 seconds',
  ];
  if (options.auth !== undefined) {
    const hash = execFileSync('openssl', ['passwd', '-apr1', options.auth.pass], { encoding: 'utf8' }).trim();
    writeFileSync(join(dir, 'htpasswd'), `${options.auth.user}:${hash}\n`, { mode: 0o644 });
    conf.push(`auth_param basic program ${NCSA} ${dir}/htpasswd`, 'auth_param basic children 1 startup=1', 'acl authed proxy_auth REQUIRED', 'http_access allow authed', 'http_access deny all');
  } else conf.push('http_access allow all');
  writeFileSync(join(dir, 'squid.conf'), `${conf.join('\n')}\n`, { mode: 0o644 });
  const child = spawn(SQUID, ['-N', '-f', join(dir, 'squid.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  onCleanup(async () => {
    await stopChild(child, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  try {
    await accepting(port, child, 'squid');
  } catch (err) {
    const cacheLog = existsSync(join(dir, 'cache.log')) ? readFileSync(join(dir, 'cache.log'), 'utf8') : '';
    throw new Error(`${(err as Error).message}\n${stderr}\n${cacheLog}`, { cause: err });
  }
  const log = (): string[] => {
    const f = join(dir, 'access.log');
    // The readiness probe (a connection closed without a request) is not a proxied request.
    return existsSync(f)
      ? readFileSync(f, 'utf8')
          .split('\n')
          .filter((l) => l !== '' && !l.includes('error:transaction-end-before-headers'))
      : [];
  };
  const auth = options.auth !== undefined ? `${encodeURIComponent(options.auth.user)}:${encodeURIComponent(options.auth.pass)}@` : '';
  return {
    port,
    url: `http://${auth}127.0.0.1:${port}`,
    log,
    async waitLog(re, count = 1) {
      const until = Date.now() + 5000;
      for (;;) {
        const hits = log().filter((l) => re.test(l));
        if (hits.length >= count) return hits[0]!;
        if (Date.now() > until) throw new Error(`fewer than ${count} squid access log lines ${re} within 5 s; the log:\n${log().join('\n')}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  };
}

/** A running microsocks. */
export interface Microsocks {
  /** Its port on 127.0.0.1. */
  readonly port: number;
  /** The `host:port` of every connection it made, from its log. */
  readonly connected: string[];
  /** Waits until its log shows `count` connections; returns them. */
  waitConnected(count: number): Promise<string[]>;
  /** `socks5[h]://[user:pass@]127.0.0.1:port`. */
  url(scheme?: 'socks5' | 'socks5h'): string;
}

/** Starts microsocks on a free port, with user/password authentication when `auth` is given. */
export async function startMicrosocks(options: { auth?: { user: string; pass: string } } = {}): Promise<Microsocks> {
  const port = await freePort();
  const args = ['-i', '127.0.0.1', '-p', String(port)];
  if (options.auth !== undefined) args.push('-u', options.auth.user, '-P', options.auth.pass);
  const child = spawn(MICROSOCKS, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const connected: string[] = [];
  let rest = '';
  child.stderr!.on('data', (d: Buffer) => {
    rest += d.toString();
    const lines = rest.split('\n');
    rest = lines.pop()!;
    for (const l of lines) {
      const m = / connected to (\S+)$/.exec(l.trim());
      if (m !== null) connected.push(m[1]!);
    }
  });
  onCleanup(() => stopChild(child));
  await accepting(port, child, 'microsocks');
  const auth = options.auth !== undefined ? `${encodeURIComponent(options.auth.user)}:${encodeURIComponent(options.auth.pass)}@` : '';
  return {
    port,
    connected,
    url: (scheme = 'socks5') => `${scheme}://${auth}127.0.0.1:${port}`,
    async waitConnected(count) {
      const until = Date.now() + 5000;
      while (connected.length < count) {
        if (Date.now() > until) throw new Error(`microsocks logged ${connected.length} connections, not ${count}, within 5 s`);
        await new Promise((r) => setTimeout(r, 10));
      }
      return connected;
    },
  };
}

/** A TCP server that hands each connection to `onConnection`; closed (with its sockets) after the test. */
export async function rawProxy(onConnection: (socket: net.Socket) => void): Promise<{ port: number; connections: number }> {
  const sockets = new Set<net.Socket>();
  const state = { port: 0, connections: 0 };
  const server = net.createServer((s) => {
    state.connections++;
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
    onConnection(s);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.port = (server.address() as net.AddressInfo).port;
  onCleanup(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return state;
}

/** Calls `fn` once `n` bytes arrived on `socket` (or at once when `n` is 0), with those bytes. */
export function afterBytes(socket: net.Socket, n: number, fn: (bytes: Buffer) => void): void {
  let buf = Buffer.alloc(0);
  if (n === 0) {
    fn(buf);
    return;
  }
  const onData = (d: Buffer): void => {
    buf = Buffer.concat([buf, d]);
    if (buf.length >= n) {
      socket.removeListener('data', onData);
      fn(buf);
    }
  };
  socket.on('data', onData);
}

/** Calls `fn` with the request head once a full HTTP head (`\r\n\r\n`) arrived on `socket`. */
export function afterHead(socket: net.Socket, fn: (head: string) => void): void {
  let buf = '';
  const onData = (d: Buffer): void => {
    buf += d.toString('latin1');
    const end = buf.indexOf('\r\n\r\n');
    if (end >= 0) {
      socket.removeListener('data', onData);
      fn(buf.slice(0, end));
    }
  };
  socket.on('data', onData);
}
