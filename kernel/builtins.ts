/**
 * Node built-ins that only some programs need (TLS, hashing and random bytes, compression),
 * loaded on first use with `require`. Imported as an ES module, a built-in is loaded at once
 * and has every export read into its namespace: tls's `rootCertificates` getter then builds the
 * whole root store as strings (~200 KiB of heap) and crypto's `webcrypto` loads Web Crypto, in
 * every program, plain HTTP included. `require` loads the module when it is first needed and
 * reads no export.
 */
import { createRequire } from 'node:module';

type Tls = typeof import('node:tls');
type Crypto = typeof import('node:crypto');
type Zlib = typeof import('node:zlib');

const load = createRequire(import.meta.url);
let tls: Tls | null = null;
let crypto: Crypto | null = null;
let zlib: Zlib | null = null;

/** node:tls, loaded on the first call. */
export function nodeTls(): Tls {
  return (tls ??= load('node:tls') as Tls);
}

/** node:crypto, loaded on the first call. */
export function nodeCrypto(): Crypto {
  return (crypto ??= load('node:crypto') as Crypto);
}

/** node:zlib, loaded on the first call. */
export function nodeZlib(): Zlib {
  return (zlib ??= load('node:zlib') as Zlib);
}
