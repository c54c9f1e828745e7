/**
 * The Hono app of the fetch-server bench, the same for every adapter: `GET /` answers the
 * scenario's body (see ./common.ts) with `c.text` for `hello`, and for `big` as a
 * `ReadableStream` of four 16 KiB chunks (a streamed response, no length known up front).
 */
import { Hono } from 'hono';
import { BIG_SIZE, SCENARIO } from './common.js';

const CHUNK = new Uint8Array(BIG_SIZE / 4).fill(0x78);

/** The app; `app.fetch` is what each adapter serves. */
export const app = new Hono();

if (SCENARIO === 'big') {
  app.get('/', (c) => {
    let n = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(ctl) {
        // A fresh copy per chunk: a stream may take over the buffer it is given.
        ctl.enqueue(CHUNK.slice());
        if (++n === 4) ctl.close();
      },
    });
    return c.body(body, 200, { 'Content-Type': 'application/octet-stream' });
  });
} else {
  app.get('/', (c) => c.text('hello world'));
}
