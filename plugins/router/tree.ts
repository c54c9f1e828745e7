/**
 * The compiled route table: a segment trie. Each node keeps its literal children in a Map
 * (one hash lookup per path segment, whatever the number of routes), then its variable
 * children (regex-constrained before plain), then `*`, then a trailing `**`. Matching walks
 * the path once, depth first, trying children in that order and backtracking on a dead end,
 * so precedence is literal over variable over wildcard at every segment regardless of the
 * order routes were registered. Fully literal routes are also kept in one Map keyed by
 * their whole path, answered by a single lookup.
 */
import { ArgumentError } from '../../kernel/index.js';
import { decodeSegment } from './path.js';
import { parsePattern, REST_PARAM } from './pattern.js';

/** One registered route. */
export interface Route<H> {
  /** Upper-case method, or null when the route accepts every method. */
  readonly method: string | null;
  /** The pattern as registered, such as `/users/{id}`: what `getRoute` returns. */
  readonly pattern: string;
  /** The handler (already wrapped by the router's middleware). */
  readonly handler: H;
  /** Variable names in path order (`**` for a trailing rest). */
  readonly names: readonly string[];
}

/** What {@link RouteTree.find} found. */
export type FindResult<H> =
  /** A route accepts the method; `params` is undefined when the route has no variables. */
  | { readonly route: Route<H>; readonly params: Record<string, string> | undefined }
  /** Routes match the path but none accepts the method; `allow` lists the methods that would. */
  | { readonly route: null; readonly allow: readonly string[] };

/** The routes of one path shape, by method. */
class Endpoint<H> {
  readonly methods = new Map<string, Route<H>>();
  any: Route<H> | null = null;
}

interface ParamEdge<H> {
  /** Anchored regex, or null for any non-empty segment. */
  readonly regex: RegExp | null;
  /** The regex source ('' for none): edges with the same constraint share a node. */
  readonly source: string;
  readonly node: Node<H>;
}

/** Above this many literal children a node looks them up in a Map; below, a scan compares in place (no slice, no hash). */
const SCAN_MAX = 8;

class Node<H> {
  /** Literal children's keys (decoded) and nodes, in the same order. */
  litKeys: string[] | null = null;
  litNodes: Node<H>[] | null = null;
  /** The same children by key, once there are more than SCAN_MAX. */
  literals: Map<string, Node<H>> | null = null;
  params: ParamEdge<H>[] | null = null;
  wildcard: Node<H> | null = null;
  /** Routes ending in `**` here. */
  rest: Endpoint<H> | null = null;
  /** Routes ending exactly here. */
  endpoint: Endpoint<H> | null = null;
}

/** Options of {@link RouteTree}. */
export interface RouteTreeOptions {
  /** Treat `/a/` as `/a` (patterns and paths alike). Default false, as find-my-way. */
  ignoreTrailingSlash?: boolean;
}

/** A segment trie of routes. */
export class RouteTree<H> {
  private readonly root = new Node<H>();
  private readonly statics = new Map<string, Endpoint<H>>();
  private readonly list: Route<H>[] = [];
  private readonly ignoreTrailingSlash: boolean;
  // Scratch state of one find(); matching is synchronous, so one set per tree suffices.
  private values: string[] = [];
  private allow: Set<string> | null = null;

  constructor(options: RouteTreeOptions = {}) {
    this.ignoreTrailingSlash = options.ignoreTrailingSlash === true;
  }

  /** Every route, in registration order. */
  get routes(): readonly Route<H>[] {
    return this.list;
  }

  /**
   * Adds a route. `method` null accepts every method. The same method on the same path shape
   * twice (variable names aside) is an `ArgumentError`, as in find-my-way.
   */
  insert(method: string | null, pattern: string, handler: H): Route<H> {
    const norm = this.ignoreTrailingSlash ? stripSlash(pattern) : pattern;
    const segs = parsePattern(norm);
    const names: string[] = [];
    let node = this.root;
    let endpoint: Endpoint<H> | null = null;
    let literal = true;
    let key = '';
    for (const seg of segs) {
      key += '/';
      switch (seg.kind) {
        case 'literal': {
          node = literalChild(node, seg.value);
          key += seg.value;
          if (seg.value.includes('/')) literal = false; // an encoded slash: not a whole-path key
          break;
        }
        case 'param': {
          names.push(seg.name);
          node = paramChild(node, seg.regex, seg.source);
          literal = false;
          break;
        }
        case 'wildcard':
          node = node.wildcard ??= new Node();
          literal = false;
          break;
        case 'rest':
          names.push(REST_PARAM);
          endpoint = node.rest ??= new Endpoint();
          literal = false;
          break;
      }
    }
    endpoint ??= node.endpoint ??= new Endpoint();
    const route: Route<H> = Object.freeze({ method, pattern, handler, names: Object.freeze(names) });
    if (method === null) {
      if (endpoint.any !== null) throw duplicate(route, endpoint.any);
      endpoint.any = route;
    } else {
      const old = endpoint.methods.get(method);
      if (old !== undefined) throw duplicate(route, old);
      endpoint.methods.set(method, route);
    }
    if (literal) this.statics.set(key, endpoint);
    this.list.push(route);
    return route;
  }

  /**
   * Finds the route for `method` and `path` (already cut at `?`): a route that accepts the
   * method, else the methods that routes of this path accept, else null (no route).
   * HEAD falls back to GET routes, as fastify does; a method-less route accepts everything.
   */
  find(method: string, path: string): FindResult<H> | null {
    this.allow = null;
    let route = this.findOnce(method, path);
    if (route === null && this.ignoreTrailingSlash && path.length > 1 && path.charCodeAt(path.length - 1) === 0x2f) {
      route = this.findOnce(method, stripSlash(path));
    }
    if (route !== null) {
      const names = route.names;
      if (names.length === 0) return { route, params: undefined };
      const params: Record<string, string> = {};
      for (let i = 0; i < names.length; i++) params[names[i]!] = this.values[i]!;
      return { route, params };
    }
    const allow = this.allow;
    this.allow = null;
    return allow === null ? null : { route: null, allow: [...allow] };
  }

  private findOnce(method: string, path: string): Route<H> | null {
    const encoded = path.indexOf('%') >= 0;
    if (!encoded) {
      const ep = this.statics.get(path);
      if (ep !== undefined) {
        const r = this.accept(ep, method);
        if (r !== null) return r;
      }
    }
    if (path.charCodeAt(0) !== 0x2f) return null;
    return this.walk(this.root, path, 1, 0, method, encoded);
  }

  private walk(node: Node<H>, path: string, start: number, depth: number, method: string, encoded: boolean): Route<H> | null {
    let end = path.indexOf('/', start);
    if (end < 0) end = path.length;
    const last = end === path.length;
    // The segment as a string is made only when needed: encoded paths, Map lookups, variables.
    let seg: string | null = encoded ? decodeSegment(path.slice(start, end)) : null;
    let lit: Node<H> | undefined;
    const keys = node.litKeys;
    if (keys !== null) {
      if (node.literals !== null) lit = node.literals.get((seg ??= path.slice(start, end)));
      else if (seg !== null) {
        const i = keys.indexOf(seg);
        if (i >= 0) lit = node.litNodes![i];
      } else {
        const len = end - start;
        for (let i = 0; i < keys.length; i++) {
          const k = keys[i]!;
          if (k.length === len && path.startsWith(k, start)) {
            lit = node.litNodes![i];
            break;
          }
        }
      }
    }
    if (lit !== undefined) {
      const r = last ? this.accept(lit.endpoint, method) : this.walk(lit, path, end + 1, depth, method, encoded);
      if (r !== null) return r;
    }
    // Variables and `*` take one non-empty segment.
    if (end > start) {
      const ps = node.params;
      if (ps !== null) {
        seg ??= path.slice(start, end);
        for (let i = 0; i < ps.length; i++) {
          const e = ps[i]!;
          if (e.regex !== null && !e.regex.test(seg)) continue;
          this.values[depth] = seg;
          const r = last ? this.accept(e.node.endpoint, method) : this.walk(e.node, path, end + 1, depth + 1, method, encoded);
          if (r !== null) return r;
        }
      }
      const w = node.wildcard;
      if (w !== null) {
        const r = last ? this.accept(w.endpoint, method) : this.walk(w, path, end + 1, depth, method, encoded);
        if (r !== null) return r;
      }
    }
    if (node.rest !== null) {
      const r = this.accept(node.rest, method);
      if (r !== null) {
        this.values[depth] = encoded ? decodeSegment(path.slice(start)) : path.slice(start);
        return r;
      }
    }
    return null;
  }

  /** The route of `ep` for `method`, or null (noting which methods `ep` would accept). */
  private accept(ep: Endpoint<H> | null, method: string): Route<H> | null {
    if (ep === null) return null;
    const r = ep.methods.get(method) ?? ep.any ?? (method === 'HEAD' ? ep.methods.get('GET') : undefined);
    if (r !== undefined) return r;
    const allow = (this.allow ??= new Set());
    for (const m of ep.methods.keys()) {
      allow.add(m);
      if (m === 'GET') allow.add('HEAD');
    }
    return null;
  }
}

function literalChild<H>(node: Node<H>, key: string): Node<H> {
  const keys = (node.litKeys ??= []);
  const nodes = (node.litNodes ??= []);
  const i = keys.indexOf(key);
  if (i >= 0) return nodes[i]!;
  const child = new Node<H>();
  keys.push(key);
  nodes.push(child);
  if (node.literals !== null) node.literals.set(key, child);
  else if (keys.length > SCAN_MAX) node.literals = new Map(keys.map((k, j) => [k, nodes[j]!]));
  return child;
}

function paramChild<H>(node: Node<H>, regex: RegExp | null, source: string): Node<H> {
  const ps = (node.params ??= []);
  for (const e of ps) if (e.source === source) return e.node;
  const edge: ParamEdge<H> = { regex, source, node: new Node() };
  // Constrained variables are tried before unconstrained ones, each group in registration order.
  if (regex === null) ps.push(edge);
  else {
    let i = 0;
    while (i < ps.length && ps[i]!.regex !== null) i++;
    ps.splice(i, 0, edge);
  }
  return edge.node;
}

function stripSlash(p: string): string {
  return p.length > 1 && p.charCodeAt(p.length - 1) === 0x2f ? p.slice(0, -1) : p;
}

function duplicate<H>(route: Route<H>, old: Route<H>): ArgumentError {
  const m = route.method ?? 'any method';
  return new ArgumentError(`route ${m} ${JSON.stringify(route.pattern)} is already registered (as ${JSON.stringify(old.pattern)}); each method and path shape takes one handler`);
}
