/**
 * `switchyard ws` against Python's `websockets` (Debian's /usr/bin/python3), a peer nobody
 * here wrote: lines out, messages in, permessage-deflate negotiated, a binary message shown,
 * a refused handshake (exit 4), a normal close when stdin ends. And against the project's
 * own WebSocket server over TLS (wss:// with --cacert, a subprotocol).
 */
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../../tls/self-signed.js';
import { WebSockets } from '../../plugins/websockets/index.js';
import { cleanEnv, findBinary, startPeer, stopPeer, type Peer } from '../helpers/peers.js';
import { runCli, runMain, startCli, tempDir } from './helpers.js';

// websockets 10 (Debian bookworm), its asyncio API. Echoes text; answers "bin" with 300 bytes 0..255,0..43; refuses /forbidden with 403.
const SERVER = `
import asyncio, http
import websockets

async def handler(ws):
    async for msg in ws:
        if msg == "bin":
            await ws.send(bytes(i % 256 for i in range(300)))
        elif msg == "bye":
            await ws.close(1000, "done")
        else:
            await ws.send("echo: " + msg)

async def process_request(path, headers):
    if path == "/forbidden":
        return (http.HTTPStatus.FORBIDDEN, [], b"no entry\\n")
    return None

async def main():
    async with websockets.serve(handler, "127.0.0.1", 0, process_request=process_request) as server:
        port = server.sockets[0].getsockname()[1]
        print(port, flush=True)
        await asyncio.Future()

asyncio.run(main())
`;

let peer: Peer | null = null;
let base = '';

beforeAll(async () => {
  const python = findBinary(['/usr/bin/python3'], 'python3-websockets');
  peer = startPeer(python, ['-c', SERVER], { env: cleanEnv() });
  const port = await new Promise<string>((resolve, reject) => {
    let out = '';
    peer!.child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /^(\d+)\n/.exec(out);
      if (m !== null) resolve(m[1]!);
    });
    void peer!.exited.then((code) => reject(new Error(`the python server exited (${code}): ${peer!.stderr()}`)));
  });
  base = `ws://127.0.0.1:${port}`;
});

afterAll(async () => {
  await stopPeer(peer);
});

describe('switchyard ws', () => {
  it('sends stdin lines, prints messages, negotiates permessage-deflate, shows binary, closes normally at EOF', async () => {
    const c = startCli(['ws', `${base}/chat`]);
    c.write('hello\n');
    await c.waitLine(/^echo: hello$/);
    c.write('bin\n');
    await c.waitLine(/^\[binary 300 bytes\] 000102/);
    c.write('second line\n');
    await c.waitLine(/^echo: second line$/);
    c.child.stdin!.end();
    expect(await c.exited).toBe(0);
    expect(c.stdout()).toBe(`echo: hello\n[binary 300 bytes] ${Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString('hex')}…\necho: second line\n`);
    expect(c.stderr()).toMatch(new RegExp(`^switchyard ws: connected to ${base}/chat \\(permessage-deflate[^)]*\\)\\n`));
    expect(c.stderr()).toMatch(/switchyard ws: closed \(1000\)\n$/);
  });

  it('--no-compress offers no extension; the server closing ends the command with 0', async () => {
    const c = startCli(['ws', `${base}/chat`, '--no-compress']);
    c.write('bye\n');
    expect(await c.exited).toBe(0);
    expect(c.stderr()).toMatch(new RegExp(`connected to ${base}/chat\\n`));
    expect(c.stderr()).toMatch(/closed \(1000 done\)/);
  });

  it('in-process: a refused handshake exits 4 with the status; a refused connection exits 1', async () => {
    const a = await runMain(['ws', `${base}/forbidden`]);
    expect(a.code).toBe(4);
    expect(a.stderr).toMatch(/^switchyard: .*403 Forbidden/);
    const b = await runMain(['ws', 'ws://127.0.0.1:1/']);
    expect(b.code).toBe(1);
    expect(b.stderr).toMatch(/^switchyard: cannot connect to 127\.0\.0\.1:1: .*ECONNREFUSED/);
  });
});

describe("switchyard ws against the project's WebSocket server", () => {
  it('wss:// with --cacert and a subprotocol: uppercases what it gets', async () => {
    const cert = selfSignedCertificate();
    const dir = await tempDir();
    await writeFile(join(dir, 'cert.pem'), cert.cert);
    const server = await WebSockets.listen(
      async (ws) => {
        for await (const m of ws) await ws.send(String(m).toUpperCase());
      },
      { host: '127.0.0.1', port: 0, tls: { key: cert.key, cert: cert.cert }, subprotocols: ['shout.v1'], compress: true },
    );
    try {
      const c = startCli(['ws', `wss://localhost:${server.port}/`, '--cacert', join(dir, 'cert.pem'), '--subprotocol', 'whisper', '--subprotocol', 'shout.v1']);
      c.write('quiet please\n');
      await c.waitLine(/^QUIET PLEASE$/);
      c.child.stdin!.end();
      expect(await c.exited).toBe(0);
      expect(c.stderr()).toMatch(/^switchyard ws: connected to wss:\/\/localhost:\d+\/ \(subprotocol shout\.v1; permessage-deflate/);
    } finally {
      await WebSockets.forceClose(server);
    }
  });
});

describe('switchyard ws when stdin ends', () => {
  it("prints the answer to a piped line every time (5 runs against python websockets and 5 against the project's server), then closes with 1000", async () => {
    const own = await WebSockets.listen(
      async (ws) => {
        for await (const m of ws) await ws.send(`own: ${String(m)}`);
      },
      { host: '127.0.0.1', port: 0, compress: true },
    );
    try {
      const loop = async (url: string, expected: string): Promise<void> => {
        for (let i = 0; i < 5; i++) {
          const r = await runCli(['ws', url], { stdin: 'x\n' });
          expect([i, r.out, r.code]).toEqual([i, expected, 0]);
          expect(r.stderr).toMatch(/switchyard ws: closed \(1000\)\n$/);
        }
      };
      await Promise.all([loop(`${base}/chat`, 'echo: x\n'), loop(`ws://127.0.0.1:${own.port}/`, 'own: x\n')]);
    } finally {
      await WebSockets.forceClose(own);
    }
    // Ten command runs, each lingering 1 s after its answer: more than the default ceiling on a busy machine.
  }, 60_000);

  it('fails, saying so, when the server never answers the close frame (--linger 0 closes at once)', async () => {
    // A server that completes the handshake and then reads and ignores every frame.
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      let head = '';
      const onData = (c: Buffer): void => {
        head += c.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        socket.off('data', onData);
        socket.on('data', () => undefined);
        const key = /^sec-websocket-key:\s*(\S+)/im.exec(head)![1]!;
        const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
        socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      };
      socket.on('data', onData);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as { port: number };
      const t0 = performance.now();
      const r = await runCli(['ws', `ws://127.0.0.1:${port}/`, '--linger', '0', '--no-compress'], { stdin: 'hi\n' });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/switchyard: the server sent no close frame within 5 s of ours; dropped the connection\n$/);
      expect(performance.now() - t0).toBeGreaterThan(4900);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
