/**
 * A TLS connection that breaks during a request (a TCP reset under it, mid-response) fails
 * the request with `TLSTransportError` (its cause the socket's error), over HTTP/1.1 and
 * HTTP/2 alike; the retries plugin counts such a reset as recoverable. The reset comes from a
 * TCP relay between the client and the project's own TLS server.
 */
import { describe, expect, it } from 'vitest';
import { TLSTransportError, type Stream } from '../../../kernel/index.js';
import { isRecoverable } from '../../../plugins/index.js';
import { cert, h2Client, relay, startStreamServer, waitFor } from '../../helpers/h2.js';

describe('TLSTransportError', () => {
  it.each(['h1', 'h2'] as const)('a TLS connection reset mid-response over %s', async (httpVersion) => {
    let started = false;
    const { port } = await startStreamServer(
      async (st: Stream) => {
        st.setHeader('Content-Length', '100000');
        await st.write('partial');
        started = true;
        await new Promise((r) => setTimeout(r, 10_000));
      },
      { secure: true },
    );
    const r = await relay(port);
    const c = await h2Client({ tlsConfig: { ca: cert.cert, servername: 'localhost' } });
    // The client's kernel has h2 alone (no retries plugin), so the reset reaches the caller.
    const p = c.get(`https://127.0.0.1:${r.port}/`, { httpVersion });
    await waitFor(() => started, 5000, 'the response started');
    r.reset();
    const err = await p.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TLSTransportError);
    expect((err as TLSTransportError).code).toBe('SWY_ERR_TLS_TRANSPORT');
    expect(((err as TLSTransportError).cause as NodeJS.ErrnoException).code).toBe('ECONNRESET');
    expect(isRecoverable(err)).toBe(true);
  });
});
