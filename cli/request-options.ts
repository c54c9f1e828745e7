/**
 * Option values shared by the request commands and `ws`: `-H` headers and the TLS trust
 * options (`--cacert`, `-k`).
 */
import { readFile } from 'node:fs/promises';
import type { ConnectionOptions } from 'node:tls';
import { isToken } from '../kernel/index.js';
import { UsageError } from './errors.js';

/** `-H 'Name: value'` values as pairs; a malformed one is a usage error. */
export function parseHeaders(list: readonly string[], command: string): [string, string][] {
  const out: [string, string][] = [];
  for (const h of list) {
    const i = h.indexOf(':');
    const name = i < 0 ? '' : h.slice(0, i).trim();
    if (i <= 0 || !isToken(name)) throw new UsageError(`-H ${JSON.stringify(h)}: expected 'Name: value'`, command);
    const value = h.slice(i + 1).trim();
    if (/[\r\n\0]/.test(value)) throw new UsageError(`-H ${JSON.stringify(h)}: a header value cannot contain CR, LF or NUL`, command);
    out.push([name, value]);
  }
  return out;
}

/** TLS options from `--cacert FILE` (trust its PEM certificates) and `-k` (no verification); undefined for neither. */
export async function tlsOptions(cacert: string | undefined, insecure: boolean, command: string): Promise<ConnectionOptions | undefined> {
  if (cacert === undefined && !insecure) return undefined;
  const tls: ConnectionOptions = {};
  if (insecure) tls.rejectUnauthorized = false;
  if (cacert !== undefined) {
    try {
      tls.ca = await readFile(cacert, 'utf8');
    } catch (err) {
      throw new UsageError(`--cacert ${cacert}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, command);
    }
    if (!tls.ca.includes('-----BEGIN CERTIFICATE-----')) throw new UsageError(`--cacert ${cacert}: no PEM certificate in the file`, command);
  }
  return tls;
}
