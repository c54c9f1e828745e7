/**
 * Vitest global setup: the real peers the interoperability tests drive (none are mocked) are
 * on this machine before any test runs. Missing Debian packages are installed with apt-get when
 * the run is root; otherwise the run stops with the one command that installs them. A test
 * never skips itself because a peer is missing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';

/** A peer: how to tell it is there, and the Debian package that brings it. */
interface Peer {
  readonly package: string;
  readonly present: () => boolean;
}

const onPath = (cmd: string) => () => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
// Daemons are looked up by path: /usr/sbin is not on every user's PATH.
const atPath = (path: string) => () => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};
// Debian's python3 with its websockets module; a pyenv python3 earlier on PATH does not see it.
const pythonModule = (module: string) => () => spawnSync('/usr/bin/python3', ['-c', `import ${module}`], { stdio: 'ignore' }).status === 0;

/** Every peer the suite drives. */
export const PEERS: readonly Peer[] = [
  { package: 'curl', present: onPath('curl') },
  { package: 'openssl', present: onPath('openssl') },
  { package: 'python3', present: atPath('/usr/bin/python3') },
  { package: 'python3-websockets', present: pythonModule('websockets') },
  { package: 'nginx', present: atPath('/usr/sbin/nginx') },
  { package: 'nghttp2-client', present: () => atPath('/usr/bin/nghttp')() && atPath('/usr/bin/h2load')() },
  { package: 'squid', present: atPath('/usr/sbin/squid') },
  { package: 'microsocks', present: atPath('/usr/bin/microsocks') },
  { package: 'chromium', present: atPath('/usr/bin/chromium') },
  { package: 'haproxy', present: atPath('/usr/sbin/haproxy') },
  { package: 'wrk', present: onPath('wrk') },
];

/** The Debian packages of the peers that are missing now. */
export function missingPackages(): string[] {
  return [...new Set(PEERS.filter((p) => !p.present()).map((p) => p.package))];
}

/** Installs what is missing, or throws with the command that would. */
export default function setup(): void {
  const missing = missingPackages();
  if (missing.length === 0) return;
  const command = `apt-get update && apt-get install -y ${missing.join(' ')}`;
  if (process.getuid?.() !== 0) {
    throw new Error(`the tests drive real peers that are missing here; install them first:\n  sudo sh -c '${command}'`);
  }
  process.stderr.write(`installing the test peers: ${missing.join(' ')}\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    execFileSync('apt-get', ['update', '-qq'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    execFileSync('apt-get', ['install', '-y', '-qq', ...missing], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  } catch (err) {
    throw new Error(`installing the test peers failed (${(err as Error).message}); run it by hand:\n  ${command}`, { cause: err });
  }
  const still = missingPackages();
  if (still.length > 0) throw new Error(`after apt-get install, still missing: ${still.join(' ')}`);
}
