/**
 * Route patterns: `/users/{id}/posts/{slug:[a-z-]+}/*` and a trailing `/**`, parsed once at
 * registration into segments the tree stores. Wrong patterns fail here with `ArgumentError`,
 * never at match time.
 */
import { ArgumentError } from '../../kernel/index.js';
import { decodeSegment } from './path.js';

/** One parsed pattern segment. */
export type PatternSegment =
  /** A literal segment, percent-decoded (requests are matched decoded). */
  | { readonly kind: 'literal'; readonly value: string }
  /** `{name}` or `{name:regex}`; `regex` is anchored to the whole segment, null for any non-empty segment. */
  | { readonly kind: 'param'; readonly name: string; readonly regex: RegExp | null; readonly source: string }
  /** `*`: any one non-empty segment, not captured. */
  | { readonly kind: 'wildcard' }
  /** `**` at the end: the rest of the path, captured as the `**` parameter. */
  | { readonly kind: 'rest' };

/** Name under which a trailing `**` stores the rest of the path. */
export const REST_PARAM = '**';

/**
 * Splits a pattern into segments. The pattern starts with `/`; `/` alone is one empty
 * segment, and a trailing slash is an empty last segment (so `/a` and `/a/` differ unless
 * the router ignores trailing slashes). A `/` inside a `{…}` regex does not split.
 */
export function parsePattern(pattern: string): PatternSegment[] {
  if (typeof pattern !== 'string') throw new ArgumentError(`route path must be a string, got ${typeof pattern}`);
  if (pattern[0] !== '/') throw new ArgumentError(`route path must start with "/", got ${JSON.stringify(pattern)}`);
  const raw = splitPattern(pattern);
  const out: PatternSegment[] = [];
  const names = new Set<string>();
  for (let i = 0; i < raw.length; i++) {
    const s = raw[i]!;
    if (s === '**') {
      if (i !== raw.length - 1) throw new ArgumentError(`route ${JSON.stringify(pattern)}: "**" is allowed only as the last segment`);
      out.push({ kind: 'rest' });
    } else if (s === '*') {
      out.push({ kind: 'wildcard' });
    } else if (s[0] === '{' && s[s.length - 1] === '}') {
      const seg = parseVariable(s, pattern);
      if (names.has(seg.name)) throw new ArgumentError(`route ${JSON.stringify(pattern)}: variable "${seg.name}" appears twice`);
      names.add(seg.name);
      out.push(seg);
    } else {
      if (s.includes('{') || s.includes('}')) {
        throw new ArgumentError(`route ${JSON.stringify(pattern)}: segment ${JSON.stringify(s)} mixes text and a variable; a variable must be a whole segment ({name} or {name:regex})`);
      }
      out.push({ kind: 'literal', value: decodeSegment(s) });
    }
  }
  return out;
}

/** Splits on `/` outside braces; checks that braces balance. */
function splitPattern(pattern: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 1;
  for (let i = 1; i < pattern.length; i++) {
    const c = pattern.charCodeAt(i);
    if (c === 0x7b /* { */) depth++;
    else if (c === 0x7d /* } */) {
      if (--depth < 0) throw new ArgumentError(`route ${JSON.stringify(pattern)}: unbalanced "}" at position ${i}`);
    } else if (c === 0x2f /* / */ && depth === 0) {
      out.push(pattern.slice(start, i));
      start = i + 1;
    }
  }
  if (depth !== 0) throw new ArgumentError(`route ${JSON.stringify(pattern)}: unbalanced "{"`);
  out.push(pattern.slice(start));
  return out;
}

function parseVariable(s: string, pattern: string): PatternSegment & { kind: 'param' } {
  const body = s.slice(1, -1);
  const colon = body.indexOf(':');
  const name = (colon < 0 ? body : body.slice(0, colon)).trim();
  if (name === '' || /[{}/]/.test(name)) {
    throw new ArgumentError(`route ${JSON.stringify(pattern)}: variable ${JSON.stringify(s)} needs a name ({id} or {id:regex})`);
  }
  // A plain object holds the params; `__proto__` as a key would replace its prototype.
  if (name === '__proto__') throw new ArgumentError(`route ${JSON.stringify(pattern)}: "__proto__" cannot be a variable name`);
  if (name === REST_PARAM) throw new ArgumentError(`route ${JSON.stringify(pattern)}: "**" is reserved for the rest of the path`);
  if (colon < 0) return { kind: 'param', name, regex: null, source: '' };
  const source = body.slice(colon + 1);
  if (source === '') throw new ArgumentError(`route ${JSON.stringify(pattern)}: variable "${name}" has an empty regular expression`);
  let regex: RegExp;
  try {
    // Anchored to the whole segment: `{id:\d+}` never matches "12abc".
    regex = new RegExp(`^(?:${source})$`);
  } catch (err) {
    throw new ArgumentError(`route ${JSON.stringify(pattern)}: variable "${name}" has an invalid regular expression /${source}/: ${(err as Error).message}`);
  }
  return { kind: 'param', name, regex, source };
}
