/**
 * The h2c plugin: cleartext HTTP/2 on plain listeners and to plain `http://` origins, on the
 * h2 plugin's machinery.
 *
 * Server: `server.protocol` takes a plain connection that opens with the HTTP/2 preface (prior
 * knowledge) when the listener allows it (the server option `allowH2c`, default true), so
 * HTTP/1.1 and h2c share one port; with `allowH2c: false` the preface goes on to HTTP/1.1, which
 * answers 400. A TLS listener ignores `allowH2c` (HTTP/2 there is negotiated by ALPN, plugin h2). `server.onUpgrade`
 * serves the HTTP/1.1 `Upgrade: h2c` path (RFC 7540 §3.2): 101, then the request is answered
 * as stream 1 of the new HTTP/2 connection.
 *
 * Client: `client.session` speaks HTTP/2 on a plain connection when the call asks for it
 * (`http2PriorKnowledge: true`, or `httpVersion: 'h2'` on an `http://` URL).
 */
import { definePlugin, OptionChecks, Stage, type OptionCheck } from '../../kernel/index.js';
import { H2_PREFACE, isH2Preface } from '../../kernel/protocol.js';
import { connectH2Session, h2PingOptions, serveH2 } from '../h2/index.js';
import { allowsH2c, type H2cServerOptions } from './options.js';
import { isH2cUpgrade, upgradeToH2c } from './upgrade.js';

export { isH2cUpgrade, upgradeToH2c } from './upgrade.js';
export { allowsH2c, type H2cServerOptions } from './options.js';

/** Options of the h2c plugin (per call or as `Client` defaults). */
export interface H2cOptions {
  /** Speak HTTP/2 to plain `http://` origins without asking first (prior knowledge). Default false. */
  http2PriorKnowledge?: boolean;
}

const NAME = 'h2c';

/** The h2c plugin (needs plugin h2). */
export const h2c = definePlugin({
  name: NAME,
  dependencies: ['h2'],
  serverOptions: { allowH2c: OptionChecks.boolean } satisfies Record<keyof H2cServerOptions, OptionCheck>,
  // Its client.session tap speaks HTTP/2 on plain connections (prior knowledge).
  clientProtocols: ['h2c'],
  register(kernel) {
    const stage = { name: NAME, stage: Stage.DEFAULT };
    // A plain connection that opens with the HTTP/2 preface is h2c: the server reads that far before asking.
    kernel.hooks.server.protocol.tap({ ...stage, preface: H2_PREFACE }, (socket, info) => {
      if (info.alpnProtocol !== null || !allowsH2c(info.server) || info.host === undefined || !isH2Preface(info.head)) return undefined;
      serveH2(socket, info.host, info.head);
      return true;
    });
    kernel.hooks.server.onUpgrade.tapPromise(stage, async (request, socket, info) => {
      if (!isH2cUpgrade(request)) return undefined;
      return upgradeToH2c(request, socket, info);
    });
    kernel.hooks.client.session.tap(stage, (socket, info) => {
      const c = info.connect;
      if (info.alpnProtocol !== null || c.protocol !== 'http:' || c.httpVersion !== 'h2') return undefined;
      return connectH2Session(socket, info, h2PingOptions(kernel));
    });
  },
});

export default h2c;
