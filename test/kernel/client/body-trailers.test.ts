/**
 * A buffered call gets the trailers that ended its body on `response.trailers` whatever took
 * the body: a `responseStream` sink, a kernel plugin that wraps the body, the decompression
 * plugin on a gzip response; each from a real loopback peer sending a chunked body with a trailer.
 */
import { Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { AbstractBody, ChunkBody, createKernel, definePlugin, Headers, Stage } from '../../../kernel/index.js';
import { decompression } from '../../../plugins/index.js';
import { closeKernelAfter } from '../../helpers/cleanup.js';
import { newClient, rawServer, readRequests } from '../../helpers/client.js';

/** A real peer answering every request with a chunked body (`content`, with `headers`) and an `X-Digest` trailer. */
async function chunkedWithTrailer(content: Buffer, digest: string, headers = ''): Promise<string> {
  const s = await rawServer((socket) =>
    readRequests(socket, () => {
      const size = content.length.toString(16);
      socket.write(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Digest\r\n${headers}\r\n${size}\r\n`);
      socket.write(content);
      socket.write(`\r\n0\r\nX-Digest: ${digest}\r\n\r\n`);
    }),
  );
  return s.origin;
}

/** Hands on what `inner` gives, a chunk at a time, with its trailers. */
class Wrapped extends ChunkBody {
  private done = false;
  private readonly buf = new Uint8Array(1024);
  constructor(private readonly inner: AbstractBody) {
    super();
  }
  protected async nextChunk(): Promise<Uint8Array | null> {
    const n = await this.inner.read(this.buf);
    return n === 0 ? null : this.buf.slice(0, n);
  }
  override trailers(): Headers {
    return this.inner.trailers();
  }
  close(): void {
    this.done = true;
    this.inner.close();
  }
  get closed(): boolean {
    return this.done;
  }
}

const wrapper = definePlugin({
  name: 'wrapper',
  register(kernel) {
    kernel.hooks.client.onResponseHead.tap({ name: 'wrapper', stage: Stage.FIRST }, (res) => {
      if (res.body instanceof AbstractBody) res.body = new Wrapped(res.body);
    });
  },
});

describe('buffered calls keep the trailers of their body', () => {
  it('a body written to responseStream', async () => {
    const origin = await chunkedWithTrailer(Buffer.from('streamed'), 'd0');
    const kernel = closeKernelAfter(await createKernel().ready());
    const chunks: Buffer[] = [];
    const sink = new Writable({
      write(c: Buffer, _e, cb) {
        chunks.push(c);
        cb();
      },
    });
    const res = await newClient({ kernel }).get(`${origin}/`, { responseStream: sink });
    expect(Buffer.concat(chunks).toString()).toBe('streamed');
    expect(res.trailers.get('X-Digest')).toBe('d0');
  });

  it('a plugin that wraps the body', async () => {
    const origin = await chunkedWithTrailer(Buffer.from('payload'), 'd1');
    const kernel = closeKernelAfter(await createKernel().register(wrapper).ready());
    const res = await newClient({ kernel }).get(`${origin}/`);
    expect(Buffer.from(res.body as Uint8Array).toString()).toBe('payload');
    expect(res.trailers.get('X-Digest')).toBe('d1');
  });

  it('the decompression plugin on a gzip body', async () => {
    const origin = await chunkedWithTrailer(gzipSync('zipped'), 'd2', 'Content-Encoding: gzip\r\n');
    const kernel = closeKernelAfter(await createKernel().register(decompression).ready());
    const res = await newClient({ kernel }).get(`${origin}/`);
    expect(Buffer.from(res.body as Uint8Array).toString()).toBe('zipped');
    expect(res.trailers.get('X-Digest')).toBe('d2');
  });
});
