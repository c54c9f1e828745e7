/**
 * Request-head parsers shared by one server's HTTP/1.1 connections. A connection holds a parser
 * only from the first byte of a request until its exchange ends, so an idle keep-alive
 * connection holds none: a parser with its buffers is most of what a connection would otherwise
 * keep while it waits, and a server waits on many more connections than it parses heads on.
 */
import { HeadParser, type HeadLimits } from '../http1/head-parser.js';

/** Free parsers kept for reuse; past this, a returned parser is left to the collector. */
const MAX_FREE = 128;

/** @internal A server's pool of request-head parsers, all with the server's limits. */
export class HeadParserPool {
  private readonly limits: HeadLimits;
  private readonly free: HeadParser[] = [];

  constructor(limits: HeadLimits) {
    this.limits = limits;
  }

  /** A parser ready for a new head. */
  take(): HeadParser {
    return this.free.pop() ?? new HeadParser('request', this.limits);
  }

  /** Gives a parser back (reset here, so whatever it held goes now); the caller must not use it again. */
  give(parser: HeadParser): void {
    parser.reset();
    if (this.free.length < MAX_FREE) this.free.push(parser);
  }
}
