/**
 * A `client.connect` tap's stream for an `https:` origin: the kernel layers TLS over it,
 * unless the stream says it is already secured (`encrypted: true`, as a `tls.TLSSocket` has),
 * as an in-memory connection standing for an origin does. Shown with a plain HTTP/1.1
 * loopback server behind the tap: marked, the request reaches it as it is; unmarked, the
 * kernel's TLS handshake meets plain HTTP and fails.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { createKernel, definePlugin, Response, TLSHandshakeError } from '../../../kernel/index.js';
import { closeKernelAfter } from '../../helpers/cleanup.js';
import { newClient, startServer, text } from '../../helpers/client.js';

/** A plugin whose connect tap dials `port` (a plain server) for every origin, marking the socket `encrypted` when asked. */
function plainTunnel(port: number, encrypted: boolean) {
  return definePlugin({
    name: 'plain-tunnel',
    register(kernel) {
      kernel.hooks.client.connect.tapPromise('plain-tunnel', async () => {
        const socket = net.connect(port, '127.0.0.1');
        await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
        if (encrypted) Object.defineProperty(socket, 'encrypted', { value: true });
        return socket;
      });
    },
  });
}

describe('client.connect: a secured stream', () => {
  it('an https: connection whose stream is marked encrypted gets no TLS layer', async () => {
    const s = await startServer((req) => new Response(200, `plain ${req.target}`));
    const kernel = closeKernelAfter(await createKernel().register(plainTunnel(s.port, true)).ready());
    const c = newClient({ kernel });
    expect(text(await c.get('https://secure.example.test/x'))).toBe('plain /x');
  });

  it('an unmarked stream for an https: origin still gets TLS', async () => {
    const s = await startServer(() => new Response(200, 'plain'));
    const kernel = closeKernelAfter(await createKernel().register(plainTunnel(s.port, false)).ready());
    const c = newClient({ kernel, connectTimeout: 5000 });
    await expect(c.get('https://secure.example.test/x')).rejects.toBeInstanceOf(TLSHandshakeError);
  });
});
