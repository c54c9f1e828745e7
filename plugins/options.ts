/**
 * The plugins' options as part of the kernel's `CallOptions`, `ClientOptions`,
 * `TransportOptions` and `ServerOptions` (declaration merging). Kept in one file directly under plugins/, so the relative module
 * path is right both in the sources and in the built `dist/plugins/index.d.ts`.
 */
import type { CacheCallOptions, CacheStatus } from './cache/index.js';
import type { CookieOptions } from './cookies/index.js';
import type { DecompressionOptions } from './decompression/index.js';
import type { RedirectOptions } from './redirects/index.js';
import type { RetryOptions } from './retries/index.js';
import type { SSEOptions } from './sse/index.js';
import type { H2Options, H2ServerOptions } from './h2/index.js';
import type { H2cServerOptions } from './h2c/index.js';
import type { ProxyOptions } from './proxy/index.js';
import type { ProxyProtocolServerOptions } from './proxy-protocol/index.js';
import type { RequestHandler } from '../kernel/index.js';
import type { Router, RouteMethod } from './router/index.js';

declare module '../kernel/index.js' {
  interface CallOptions extends CacheCallOptions, RedirectOptions, DecompressionOptions, RetryOptions, CookieOptions, SSEOptions, H2Options, ProxyOptions {}
  /** The router plugin's decorations. */
  interface Kernel {
    readonly router: Router<RequestHandler>;
    readonly route: RouteMethod;
  }
  interface ClientOptions extends CacheCallOptions, RedirectOptions, DecompressionOptions, RetryOptions, CookieOptions, SSEOptions, H2Options, ProxyOptions {}
  interface TransportOptions extends ProxyOptions {}
  /** The cache plugin's field. */
  interface Response {
    /** How the cache plugin served this response (see `CacheStatus`); undefined without the plugin. */
    cacheStatus?: CacheStatus;
  }
  interface ServerOptions extends H2ServerOptions, H2cServerOptions, ProxyProtocolServerOptions {}
}

export {};
