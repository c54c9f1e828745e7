/** The h2c plugin's server option, `allowH2c`, and how a listener's options read. */
import type { ServerInfo } from '../../kernel/index.js';

/** Server options of the h2c plugin (`serve`, `listen`), joined to `ServerOptions` by declaration merging. */
export interface H2cServerOptions {
  /** Serve cleartext HTTP/2 (h2c) on a plain listener. Default true; false answers the preface with 400. A TLS listener ignores it. */
  allowH2c?: boolean;
}

/** True when h2c (prior knowledge and `Upgrade: h2c`) may be served on this listener: a plain one whose `allowH2c` is not false. */
export function allowsH2c(server: ServerInfo): boolean {
  return !server.tls && (server.options as H2cServerOptions).allowH2c !== false;
}
