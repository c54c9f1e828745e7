/**
 * The prefaces `server.protocol` taps declared, and how far the first bytes of a plain
 * connection match them: the server reads until they hold a whole preface or can no longer
 * become one, each read bounded so that it never goes past the end of a preface the bytes may
 * still be (what follows a preface stays in the socket for the protocol that takes it).
 */
import type { ServerHooks, Tapped } from '../hooks.js';

/** The declared prefaces of one server's protocol taps. */
export class Prefaces {
  /** Length of the shortest preface: the first read. */
  readonly shortest: number;
  private readonly list: readonly Uint8Array[];

  private constructor(list: readonly Uint8Array[]) {
    this.list = list;
    this.shortest = Math.min(...list.map((p) => p.length));
  }

  /** The prefaces the hook's taps declared (`{ preface }` in their options), or null when none did. */
  static of(hook: NonNullable<Tapped<ServerHooks>['protocol']>): Prefaces | null {
    const list: Uint8Array[] = [];
    for (const tap of hook.taps as { preface?: Uint8Array }[]) if (tap.preface !== undefined) list.push(tap.preface);
    return list.length > 0 ? new Prefaces(list) : null;
  }

  /** 1 when `head` starts with a whole preface, 0 when it is the start of one (more bytes decide), -1 when of none. */
  match(head: Uint8Array): -1 | 0 | 1 {
    let r: -1 | 0 | 1 = -1;
    for (const p of this.list) {
      const m = matchOne(head, p);
      if (m === 1) return 1;
      if (m === 0) r = 0;
    }
    return r;
  }

  /** The next read after `head`: the fewest bytes still missing from a preface `head` is the start of (0 when none). */
  missing(head: Uint8Array): number {
    let n = 0;
    for (const p of this.list) {
      const m = p.length - head.length;
      if (m > 0 && (n === 0 || m < n) && matchOne(head, p) === 0) n = m;
    }
    return n;
  }
}

function matchOne(head: Uint8Array, preface: Uint8Array): -1 | 0 | 1 {
  const n = Math.min(head.length, preface.length);
  for (let i = 0; i < n; i++) if (head[i] !== preface[i]) return -1;
  return n === preface.length ? 1 : 0;
}
