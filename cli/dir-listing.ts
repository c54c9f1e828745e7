/**
 * Directory listings for `switchyard serve`: an HTML page of a directory's entries, for a
 * directory URL (ending in `/`) that has no index file. The fileserver plugin serves files
 * only; the listing is the command's own, put in front of it.
 *
 * - Names are HTML-escaped in the text and percent-encoded in the links, so any file name
 *   (`<script>`, `a&b`, `?`, `#`, `%`, quotes, spaces) shows as itself and links to itself.
 * - Dotfiles are neither listed nor listed into (`/.git/` gets the file server's answer),
 *   unless `dotfiles` is true (the file server serves them too, `--dotfiles allow`).
 * - The path is decoded as the file server decodes it: one with `..`, `.`, an empty segment,
 *   a backslash or NUL (encoded or not) is never listed, and the directory's real path
 *   (symlinks resolved) must be under the root.
 * - The page runs nothing: `Content-Security-Policy: default-src 'none'`.
 */
import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { Response, type Request, type RequestHandler } from '../kernel/index.js';
import { decodeRequestPath, isDotPath } from '../plugins/fileserver/index.js';

/**
 * `files`, answering its 404s for directory URLs under `root` with a listing; `dotfiles`
 * true lists dotfiles and dot-directories as well.
 */
export function withDirectoryListing(files: RequestHandler, root: string, dotfiles = false): RequestHandler {
  const rootReal = realpath(root);
  return async (req: Request): Promise<Response> => {
    const res = await files(req);
    if (res.status !== 404 || (req.method !== 'GET' && req.method !== 'HEAD')) return res;
    const listing = await listDirectory(req.target, await rootReal, dotfiles);
    return listing ?? res;
  };
}

/** The listing page for `target`, or null when it does not name a listable directory. */
async function listDirectory(target: string, rootReal: string, dotfiles: boolean): Promise<Response | null> {
  const segments = directorySegments(target, dotfiles);
  if (segments === null) return null;
  let dir: string;
  try {
    dir = await realpath(join(rootReal, ...segments));
  } catch {
    return null;
  }
  if (dir !== rootReal && !dir.startsWith(rootReal.endsWith(sep) ? rootReal : rootReal + sep)) return null;
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return null;
  }
  const shown: { name: string; isDir: boolean }[] = [];
  for (const e of entries) {
    if (!dotfiles && e.name.startsWith('.')) continue;
    let isDir = e.isDirectory();
    if (e.isSymbolicLink()) {
      // A link is shown as what it points to; a dangling one is left out.
      const st = await stat(join(dir, e.name)).catch(() => null);
      if (st === null) continue;
      isDir = st.isDirectory();
    }
    shown.push({ name: e.name, isDir });
  }
  shown.sort((a, b) => (a.isDir !== b.isDir ? (a.isDir ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const title = `Index of /${segments.map((s) => `${s}/`).join('')}`;
  const items = segments.length > 0 ? ['<li><a href="../">../</a></li>'] : [];
  for (const { name, isDir } of shown) {
    const slash = isDir ? '/' : '';
    items.push(`<li><a href="${encodeURIComponent(name)}${slash}">${escapeHtml(name)}${slash}</a></li>`);
  }
  const html =
    `<!doctype html>\n<html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>\n` + `<body><h1>${escapeHtml(title)}</h1>\n<ul>\n${items.join('\n')}\n</ul></body></html>\n`;
  return new Response(
    200,
    [
      ['Content-Type', 'text/html; charset=utf-8'],
      ['Content-Security-Policy', "default-src 'none'"],
      ['X-Content-Type-Options', 'nosniff'],
    ],
    html,
  );
}

/**
 * The decoded segments of a directory URL path (`/a%20b/c/` is `['a b', 'c']`), or null for a
 * path that is not one (no trailing slash) or may not be listed (see the module notes).
 */
function directorySegments(target: string, dotfiles: boolean): string[] | null {
  const d = decodeRequestPath(target);
  if (d === null || !(d.trailingSlash || d.rawPath === '/')) return null;
  if (!dotfiles && isDotPath(d.segments)) return null;
  return [...d.segments];
}

/** Text for HTML (element content and quoted attribute values). */
function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
