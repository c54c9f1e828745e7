/**
 * Kernels, clients and origin servers for the proxy tests: a booted kernel with the proxy
 * plugin (plus whatever else a test lists), clients closed after each test, and origins that
 * record what reached them.
 */
import { Client, Response, createKernel, type AnyPlugin, type ClientOptions, type Kernel } from '../../../kernel/index.js';
import { selfSignedCertificate, type SelfSignedCertificate } from '../../../tls/self-signed.js';
import { proxy, type ProxyPluginOptions } from '../../../plugins/proxy/index.js';
import { onCleanup, startServer } from '../../helpers/server.js';

/** A booted kernel with the proxy plugin (options `pluginOptions`) and `more`; closed after the test. */
export async function bootKernel(more: AnyPlugin[] = [], pluginOptions: ProxyPluginOptions = {}): Promise<Kernel> {
  const kernel = createKernel().register(proxy, pluginOptions);
  if (more.length > 0) kernel.register(more);
  await kernel.ready();
  onCleanup(() => kernel.close());
  return kernel;
}

/** A client on `kernel` (default: a fresh proxy-only kernel); closed after the test. */
export async function makeClient(options: Omit<ClientOptions, 'kernel'> = {}, kernel?: Kernel): Promise<Client> {
  const client = new Client({ ...options, kernel: kernel ?? (await bootKernel()) });
  onCleanup(() => client.close());
  return client;
}

/** What an origin saw of one request. */
export interface Hit {
  target: string;
  host: string;
  proxyAuthorization: string | undefined;
}

/** An origin server answering `<scheme> <path>` for every request, recording each one. */
export interface Origin {
  port: number;
  hits: Hit[];
}

let cert: SelfSignedCertificate | null = null;
/** One certificate for every TLS origin: valid for origin.test, localhost, loopback and 0.0.0.0. */
export function certificate(): SelfSignedCertificate {
  return (cert ??= selfSignedCertificate({ hosts: ['origin.test', 'localhost', '127.0.0.1', '0.0.0.0', '::1'] }));
}

/** Starts an origin on `host` (default 127.0.0.1), plain or TLS. */
export async function startOrigin(options: { tls?: boolean; host?: string } = {}): Promise<Origin> {
  const hits: Hit[] = [];
  const scheme = options.tls === true ? 'https' : 'http';
  const { port } = await startServer(
    (req) => {
      hits.push({
        target: req.target,
        host: req.headers.get('Host') ?? '',
        proxyAuthorization: req.headers.get('Proxy-Authorization'),
      });
      const path = req.target.startsWith('/') ? req.target : new URL(req.target).pathname;
      if (path.startsWith('/redirect-to/')) return new Response(302, 'moved', { headers: { Location: decodeURIComponent(path.slice('/redirect-to/'.length)) } });
      return new Response(200, `${scheme} ${path}`);
    },
    { ...(options.tls === true ? { tls: { key: certificate().key, cert: certificate().cert } } : {}), ...(options.host !== undefined ? { host: options.host } : {}) },
  );
  return { port, hits };
}

/** Awaits `p` and returns what it rejected with (fails when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

/** Closes `kernel` after the test. */
export function onCleanupKernel(kernel: Kernel): void {
  onCleanup(() => kernel.close());
}
