/**
 * Record and replay: exchanges with a real loopback server written to a JSON file (text as
 * text, binary and compressed bodies as base64, credentials left out), then answered from
 * that file with the server closed, through the default plugins again.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import * as HTTP from '../../../index.js';
import { presets } from '../../../plugins/index.js';
import { closeKernelAfter, onCleanup } from '../../helpers/cleanup.js';
import { rawServer, readRequests } from '../../helpers/client.js';
import { startServer, stopServer } from '../../helpers/server.js';

const BINARY = Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x41]);
const LONG = 'recorded and compressed '.repeat(50);

async function tempFile(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'swy-mock-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'nested', 'exchanges.json');
}

async function kernelWith(mocks: HTTP.MockAgent): Promise<HTTP.Kernel> {
  return HTTP.createKernel()
    .register([...presets.defaults, mocks.plugin])
    .ready();
}

describe('mock: record and replay', () => {
  it('records real exchanges, then replays them with the server closed', async () => {
    let hits = 0;
    const { server, port } = await startServer(async (req) => {
      hits++;
      if (req.target === '/text') return new HTTP.Response(200, [['Content-Type', 'text/plain']], 'hello');
      if (req.target === '/bin') return new HTTP.Response(200, [['Content-Type', 'application/octet-stream']], BINARY);
      if (req.target === '/gz') return new HTTP.Response(200, [['Content-Encoding', 'gzip']], gzipSync(LONG));
      if (req.target === '/count?n=1') return new HTTP.Response(200, `count ${hits}`);
      if (req.method === 'POST') return new HTTP.Response(201, `created ${Buffer.from(req.body as Uint8Array).toString()}`);
      return new HTTP.Response(404, 'no');
    });
    const origin = `http://127.0.0.1:${port}`;
    const file = await tempFile();

    const recorder = HTTP.mock({ record: file });
    const k1 = await kernelWith(recorder);
    const c1 = k1.client();
    expect((await HTTP.get(`${origin}/text`, { client: c1, headers: { Authorization: 'Bearer secret' } })).text()).toBe('hello');
    expect(Buffer.from((await HTTP.get(`${origin}/bin`, { client: c1 })).body as Uint8Array)).toEqual(BINARY);
    expect((await HTTP.get(`${origin}/gz`, { client: c1 })).text()).toBe(LONG);
    expect((await HTTP.get(`${origin}/count?n=1`, { client: c1 })).text()).toBe('count 4');
    expect((await HTTP.get(`${origin}/count?n=1`, { client: c1 })).text()).toBe('count 5');
    expect((await HTTP.post(`${origin}/items`, null, 'a', { client: c1 })).text()).toBe('created a');
    expect((await HTTP.post(`${origin}/items`, null, 'b', { client: c1 })).text()).toBe('created b');
    await k1.close(); // saves the recording
    await stopServer(server);

    const rec = JSON.parse(await readFile(file, 'utf8')) as HTTP.Recording;
    expect(rec.version).toBe(1);
    expect(rec.exchanges.map((e) => `${e.method} ${e.url} ${e.status}`)).toEqual([
      `GET ${origin}/text 200`,
      `GET ${origin}/bin 200`,
      `GET ${origin}/gz 200`,
      `GET ${origin}/count?n=1 200`,
      `GET ${origin}/count?n=1 200`,
      `POST ${origin}/items 201`,
      `POST ${origin}/items 201`,
    ]);
    const [text, bin, gz] = rec.exchanges;
    expect(text!.body).toEqual({ encoding: 'utf8', data: 'hello' });
    expect(text!.requestHeaders.some(([k]) => k.toLowerCase() === 'authorization')).toBe(false);
    expect(bin!.body).toEqual({ encoding: 'base64', data: BINARY.toString('base64') });
    // The bytes as the server sent them: still compressed, with their Content-Encoding.
    expect(gz!.body.encoding).toBe('base64');
    expect(gz!.headers.some(([k, v]) => k.toLowerCase() === 'content-encoding' && v === 'gzip')).toBe(true);
    expect(rec.exchanges[5]!.requestBody).toEqual({ encoding: 'utf8', data: 'a' });

    const replayer = HTTP.mock({ replay: file });
    const k2 = closeKernelAfter(await kernelWith(replayer));
    const c2 = k2.client();
    expect((await HTTP.get(`${origin}/text`, { client: c2 })).text()).toBe('hello');
    expect(Buffer.from((await HTTP.get(`${origin}/bin`, { client: c2 })).body as Uint8Array)).toEqual(BINARY);
    expect((await HTTP.get(`${origin}/gz`, { client: c2 })).text()).toBe(LONG);
    // Repeated requests replay in the order recorded; the last one repeats.
    expect((await HTTP.get(`${origin}/count?n=1`, { client: c2 })).text()).toBe('count 4');
    expect((await HTTP.get(`${origin}/count?n=1`, { client: c2 })).text()).toBe('count 5');
    expect((await HTTP.get(`${origin}/count?n=1`, { client: c2 })).text()).toBe('count 5');
    // The request body tells recorded POSTs apart.
    expect((await HTTP.post(`${origin}/items`, null, 'b', { client: c2 })).text()).toBe('created b');
    expect((await HTTP.post(`${origin}/items`, null, 'a', { client: c2 })).text()).toBe('created a');
    const unknown = await HTTP.get(`${origin}/other`, { client: c2 }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(HTTP.MockNotMatchedError);
    expect(hits).toBe(7);
  });

  it('records trailers and replays them', async () => {
    // A chunked body ending with a trailer, from a real peer that then goes away.
    const peer = await rawServer((socket) => readRequests(socket, () => socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\nX-Checksum: c1\r\n\r\n')));
    const file = await tempFile();
    const recorder = HTTP.mock({ record: file });
    const url = `${peer.origin}/t`;
    expect((await HTTP.get(url, { client: recorder.client() })).trailers.get('X-Checksum')).toBe('c1');
    await recorder.close();
    await new Promise<void>((resolve) => peer.server.close(() => resolve()));
    const rec = JSON.parse(await readFile(file, 'utf8')) as HTTP.Recording;
    expect(rec.exchanges[0]!.trailers).toEqual([['X-Checksum', 'c1']]);
    const replayer = HTTP.mock({ replay: file });
    onCleanup(() => replayer.close());
    const res = await HTTP.get(url, { client: replayer.client() });
    expect(res.text()).toBe('body');
    expect(res.trailers.get('X-Checksum')).toBe('c1');
  });

  it('save() writes what was recorded so far', async () => {
    const { port } = await startServer(() => new HTTP.Response(200, 'saved'));
    const file = await tempFile();
    const mocks = HTTP.mock({ record: file });
    const kernel = closeKernelAfter(await kernelWith(mocks));
    await HTTP.get(`http://127.0.0.1:${port}/a`, { client: kernel.client() });
    await mocks.save();
    const rec = JSON.parse(await readFile(file, 'utf8')) as HTTP.Recording;
    expect(rec.exchanges.map((e) => e.body.data)).toEqual(['saved']);
  });

  it('replay refuses a missing or malformed file with ArgumentError', async () => {
    const file = await tempFile();
    expect(() => HTTP.mock({ replay: file })).toThrow(/cannot read .*record it first/);
  });
});
