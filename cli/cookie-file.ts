/**
 * `--cookies FILE`: a CookieJar kept in a Netscape cookies.txt file, the format curl (`-b`/`-c`),
 * wget and browsers' export tools read and write, so a session can move between them.
 *
 * One cookie per line, seven tab-separated fields: domain (a leading dot for a domain cookie),
 * include-subdomains (`TRUE` for a domain cookie, `FALSE` for host-only), path, secure
 * (`TRUE`/`FALSE`), expiry (Unix seconds, 0 for a session cookie), name, value. Lines starting
 * with `#` are comments, except `#HttpOnly_` which marks an HttpOnly cookie (curl's extension).
 * SameSite has no field in this format and is not kept. Session cookies are kept in the file
 * (as curl does): the "session" is the file.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { ArgumentError } from '../kernel/index.js';
import { Cookie, CookieJar } from '../plugins/cookies/index.js';

const HTTP_ONLY = '#HttpOnly_';

/** Reads a cookies.txt file into a new jar; a missing file gives an empty jar. Malformed lines are skipped. */
export async function loadCookieFile(path: string, now = Date.now()): Promise<CookieJar> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new CookieJar();
    throw err;
  }
  return parseCookieFile(text, now);
}

/** Parses cookies.txt text into a new jar (expired cookies are left out). */
export function parseCookieFile(text: string, now = Date.now()): CookieJar {
  const jar = new CookieJar();
  let order = 0;
  for (const raw of text.split(/\r?\n/)) {
    let line = raw;
    let httpOnly = false;
    if (line.startsWith(HTTP_ONLY)) {
      httpOnly = true;
      line = line.slice(HTTP_ONLY.length);
    } else if (line.startsWith('#') || line.trim() === '') continue;
    const f = line.split('\t');
    if (f.length !== 7) continue;
    const [domainField, sub, path, secure, expiry, name, value] = f as [string, string, string, string, string, string, string];
    if (domainField === '' || name === '' || !/^\d+$/.test(expiry)) continue;
    const seconds = Number(expiry);
    let c: Cookie;
    try {
      c = new Cookie(name, value, {
        path: path === '' ? '/' : path,
        domain: domainField,
        ...(seconds > 0 ? { expires: new Date(seconds * 1000) } : {}),
        secure: secure.toUpperCase() === 'TRUE',
        httpOnly,
      });
    } catch (err) {
      if (err instanceof ArgumentError) continue; // a cookie that could not be sent back (a name that is not a token, a `;` or `\` in the value, …)
      throw err;
    }
    if (c.expiryTime() <= now) continue;
    // Host-only unless the file says the cookie covers subdomains (curl writes a leading dot then too).
    c.hostOnly = sub.toUpperCase() !== 'TRUE' && !domainField.startsWith('.');
    // Creation order is file order, so cookies of equal path length keep their order.
    c.created = now - 1_000_000 + order++;
    let bucket = jar.entries.get(c.domain);
    if (bucket === undefined) jar.entries.set(c.domain, (bucket = new Map()));
    bucket.set(`${c.name};${c.path}`, c);
  }
  return jar;
}

/** The jar as cookies.txt text (expired cookies left out). */
export function formatCookieFile(jar: CookieJar, now = Date.now()): string {
  const lines = ['# Netscape HTTP Cookie File', '# Written by switchyard. Edit at your own risk.', ''];
  for (const bucket of jar.entries.values()) {
    for (const c of bucket.values()) {
      const t = c.expiryTime();
      if (t <= now) continue;
      const expiry = t === Infinity ? 0 : Math.max(1, Math.floor(t / 1000));
      const domain = c.hostOnly ? c.domain : `.${c.domain}`;
      lines.push(`${c.httpOnly ? HTTP_ONLY : ''}${domain}\t${c.hostOnly ? 'FALSE' : 'TRUE'}\t${c.path || '/'}\t${c.secure ? 'TRUE' : 'FALSE'}\t${expiry}\t${c.name}\t${c.value}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Writes the jar to `path` (replacing it in one step, readable by the owner only: cookies are credentials). */
export async function saveCookieFile(path: string, jar: CookieJar, now = Date.now()): Promise<void> {
  const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(tmp, formatCookieFile(jar, now), { mode: 0o600 });
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
