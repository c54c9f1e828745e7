/**
 * Opening a file to serve, with the checks that must hold for the descriptor actually opened:
 * inside the root (symlinks resolved), and its stat taken from the descriptor so size, date and
 * content belong to the same file.
 *
 * The open is non-blocking: a symlink (or a name) pointing at a FIFO would otherwise block a
 * libuv thread until a writer shows up. The real path comes from `/proc/self/fd/<fd>` where
 * Linux has it (no race between the check and the open); elsewhere from `realpath` of the name.
 */
import process from 'node:process';
import fs from 'node:fs';
import { isWithin } from './path-safety.js';

/** An opened file: its descriptor and stat. */
export interface Opened {
  readonly fd: number;
  readonly stat: fs.Stats;
}

/** Why a file could not be served: missing (404), forbidden (403). */
export type OpenFailure = 'missing' | 'forbidden';

const FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0);

// Missing in every way that matters to a client: 404.
const MISSING_CODES = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'ENAMETOOLONG', 'EISDIR', 'EINVAL', 'ENXIO']);
const FORBIDDEN_CODES = new Set(['EACCES', 'EPERM']);

let procFd = process.platform === 'linux';

function openFd(path: string): Promise<number> {
  return new Promise((resolve, reject) => fs.open(path, FLAGS, (err, fd) => (err !== null ? reject(err) : resolve(fd))));
}

function fstat(fd: number): Promise<fs.Stats> {
  return new Promise((resolve, reject) => fs.fstat(fd, (err, st) => (err !== null ? reject(err) : resolve(st))));
}

function realPathOf(fd: number, path: string): Promise<string> {
  if (procFd) {
    return new Promise((resolve, reject) =>
      fs.readlink(`/proc/self/fd/${fd}`, (err, link) => {
        if (err === null && link.startsWith('/')) {
          resolve(link);
          return;
        }
        // No /proc here (a sandbox): fall back to realpath from now on.
        procFd = false;
        fs.realpath.native(path, (e2, p) => (e2 !== null ? reject(e2) : resolve(p)));
      }),
    );
  }
  return new Promise((resolve, reject) => fs.realpath.native(path, (err, p) => (err !== null ? reject(err) : resolve(p))));
}

/** Closes a descriptor, ignoring errors (nothing useful can be done about them here). */
export function closeFd(fd: number): void {
  fs.close(fd, () => {});
}

/**
 * Opens `path` for reading. With `rootReal` (the root's resolved path), a file whose real path
 * is outside it counts as missing. Errors other than missing/forbidden are thrown.
 */
export async function openServed(path: string, rootReal: string | null): Promise<Opened | OpenFailure> {
  let fd: number;
  try {
    fd = await openFd(path);
  } catch (err) {
    return failure(err);
  }
  try {
    if (rootReal === null) return { fd, stat: await fstat(fd) };
    // Both at once: the check and the stat are independent reads of the same descriptor.
    const [real, stat] = await Promise.all([realPathOf(fd, path), fstat(fd)]);
    if (!isWithin(rootReal, real)) {
      closeFd(fd);
      return 'missing';
    }
    return { fd, stat };
  } catch (err) {
    closeFd(fd);
    return failure(err);
  }
}

function failure(err: unknown): OpenFailure {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code !== undefined && MISSING_CODES.has(code)) return 'missing';
  if (code !== undefined && FORBIDDEN_CODES.has(code)) return 'forbidden';
  throw err;
}
