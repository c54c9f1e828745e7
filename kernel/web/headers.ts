/**
 * Header fields across the line between switchyard's `Headers` and the web's (the global
 * `Headers` of the Fetch standard), both ways, so each converter does it one way.
 */
import { Headers } from '../message/headers.js';

/**
 * The global `Headers` holding `headers`' fields. The web type keeps one combined value per
 * name (joined with ", "), except `Set-Cookie`, whose fields stay apart (`getSetCookie()`).
 * Throws the web type's `TypeError` for a name or value it refuses.
 */
export function toWebHeaders(headers: Headers): globalThis.Headers {
  const out = new globalThis.Headers();
  for (let i = 0; i < headers.size; i++) out.append(headers.nameAt(i), headers.valueAt(i));
  return out;
}

/**
 * switchyard `Headers` holding the fields of a global `Headers` (names lower-case, as the web
 * type gives them; each `Set-Cookie` field its own pair).
 */
export function fromWebHeaders(headers: globalThis.Headers): Headers {
  const out = new Headers();
  // The web type's iterator already yields Set-Cookie fields one by one (and others combined).
  for (const [name, value] of headers) out.push(name, value);
  return out;
}
