/**
 * A small static site on disk for the fileserver tests, in a fresh temp directory:
 *
 * base/
 *   secret.txt            random bytes that must never come back through the server
 *   secret-dir/inner.txt  more of them
 *   fifo                  a FIFO (opening it for reading would block)
 *   root/                 the served root (see `files`), with symlinks that leave it
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A 1×1 PNG. */
export const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5d2b5d10000000049454e44ae426082', 'hex');

/** The site's files by path under root. */
export interface Site {
  base: string;
  root: string;
  secret: Buffer;
  files: Record<string, Buffer>;
  /** Removes the whole tree. */
  remove(): void;
}

/** Builds the site. */
export function makeSite(): Site {
  const base = fs.mkdtempSync(join(tmpdir(), 'swy-fileserver-'));
  const root = join(base, 'root');
  const secret = Buffer.concat([Buffer.from('SECRET-'), Buffer.from(randomBytes(24).toString('hex'))]);
  fs.writeFileSync(join(base, 'secret.txt'), secret);
  fs.mkdirSync(join(base, 'secret-dir'));
  fs.writeFileSync(join(base, 'secret-dir', 'inner.txt'), secret);
  fs.writeFileSync(join(base, 'root-evil.txt'), secret); // a sibling whose name starts like the root's
  execFileSync('/usr/bin/mkfifo', [join(base, 'fifo')]);
  const files: Record<string, Buffer> = {
    'index.html': Buffer.from('<!DOCTYPE html><html><head><title>t</title><link rel="stylesheet" href="style.css"></head><body><img src="logo.png"><script src="app.js"></script></body></html>'),
    'style.css': Buffer.from('body { color: #123; }\n'),
    'app.js': Buffer.from('document.title = "loaded";\n'),
    'logo.png': PNG,
    'sub/index.html': Buffer.from('<html><body>sub</body></html>'),
    'sub/page.txt': Buffer.from('sub page\n'),
    'noindex/file.txt': Buffer.from('file in a directory without an index\n'),
    'sniff-html': Buffer.from('  <html><body>no extension</body></html>'),
    'sniff-bin': Buffer.from([0x00, 0x01, 0x02, 0x03, 0x04]),
    'sniff-text': Buffer.from('just text\n'),
    'empty.txt': Buffer.alloc(0),
    'with space.txt': Buffer.from('space\n'),
    'café.txt': Buffer.from('unicode name\n'),
    'digits.txt': Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz'),
    'big.bin': randomBytes(3 * 1024 * 1024 + 17),
    'home/home.htm': Buffer.from('<p>home</p>'),
  };
  for (const [p, data] of Object.entries(files)) {
    fs.mkdirSync(join(root, p, '..'), { recursive: true });
    fs.writeFileSync(join(root, p), data);
  }
  // Symlinks: out of the root (relative, absolute, to a directory, to a FIFO) and one inside.
  fs.symlinkSync('../secret.txt', join(root, 'link-out.txt'));
  fs.symlinkSync(join(base, 'secret.txt'), join(root, 'abs-link-out.txt'));
  fs.symlinkSync('../secret-dir', join(root, 'dir-link-out'));
  fs.symlinkSync('../fifo', join(root, 'fifo-link'));
  fs.symlinkSync('style.css', join(root, 'link-in.css'));
  fs.symlinkSync('../root-evil.txt', join(root, 'prefix-trick.txt'));
  return { base, root, secret, files, remove: () => fs.rmSync(base, { recursive: true, force: true }) };
}

/** Number of open file descriptors of this process (Linux). */
export function openFds(): number {
  return fs.readdirSync('/proc/self/fd').length;
}
