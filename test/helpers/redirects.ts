/**
 * Shared by the redirects and decompression tests: a booted kernel with both plugins and a
 * `Client` on it, both closed after the test (servers come from the server tests' helpers,
 * which force-close them after each test).
 */
import { Client, createKernel, type ClientOptions, type Kernel } from '../../kernel/index.js';
import { decompression, redirects } from '../../plugins/index.js';
import { onCleanup } from './server.js';

export { onCleanup, startServer, startStreamServer, waitConnections, waitFor, within } from './server.js';

/** A kernel with `plugins` (default: redirects and decompression), booted, closed after the test. */
export async function bootKernel(plugins: Parameters<Kernel['register']>[0] = [redirects, decompression]): Promise<Kernel> {
  const kernel = createKernel().register(plugins);
  await kernel.ready();
  onCleanup(() => kernel.close());
  return kernel;
}

/** A client on a booted kernel with redirects and decompression; closed after the test. */
export async function makeClient(options: Omit<ClientOptions, 'kernel'> = {}, kernel?: Kernel): Promise<Client> {
  const k = kernel ?? (await bootKernel());
  const client = new Client({ ...options, kernel: k });
  onCleanup(() => client.close());
  return client;
}

/** What a test server saw of one request. */
export interface Seen {
  method: string;
  target: string;
  headers: Record<string, string>;
  body: string;
}

/** Records the method, target, headers (lower-case names) and body of a request. */
export function record(into: Seen[], req: { method: string; target: string; headers: Iterable<[string, string]>; body: unknown }): void {
  const headers: Record<string, string> = {};
  for (const [k, v] of req.headers) headers[k.toLowerCase()] = headers[k.toLowerCase()] === undefined ? v : `${headers[k.toLowerCase()]}, ${v}`;
  const b = req.body;
  const body = b == null ? '' : typeof b === 'string' ? b : Buffer.from(b as Uint8Array).toString('utf8');
  into.push({ method: req.method, target: req.target, headers, body });
}
