/**
 * Helpers of the WebSockets tests: servers closed after each test, a raw WebSocket client that
 * writes hand-made frames (for bad input), and a frame reader for what the server sends.
 */
import { randomBytes } from 'node:crypto';
import { afterEach } from 'vitest';
import type { Server } from '../../kernel/index.js';
import { WebSockets, type WebSocketHandler, type WebSocketListenOptions } from '../../plugins/websockets/index.js';
import { rawClient, waitFor, within, type RawClient } from './server.js';

export { rawClient, waitFor, within, onCleanup, type RawClient } from './server.js';

const servers = new Set<Server>();

afterEach(async () => {
  const all = [...servers];
  servers.clear();
  await Promise.all(all.map((s) => WebSockets.forceClose(s)));
});

/** Errors the server reported (handler errors). */
export interface WsStarted {
  server: Server;
  port: number;
  url: string;
  errors: unknown[];
}

/** `WebSockets.listen` on 127.0.0.1 port 0, force-closed after the test. */
export async function startWs(handler: WebSocketHandler, options: WebSocketListenOptions = {}): Promise<WsStarted> {
  const errors: unknown[] = [];
  const server = await WebSockets.listen(handler, { host: '127.0.0.1', port: 0, onError: (e) => errors.push(e), ...options });
  servers.add(server);
  return { server, port: server.port, url: `ws://127.0.0.1:${server.port}`, errors };
}

/** Tracks a server started otherwise (force-closed after the test). */
export function trackServer(server: Server): void {
  servers.add(server);
}

/** An echo handler: every message goes back as it came. */
export const echo: WebSocketHandler = async (ws) => {
  for await (const m of ws) await ws.send(m);
};

/** One frame as read off the wire. */
export interface Frame {
  fin: boolean;
  rsv1: boolean;
  opcode: number;
  payload: Buffer;
}

/** Encodes one frame; `mask` false sends it unmasked (a protocol error from a client). */
export function frame(opcode: number, payload: Uint8Array | string, o: { fin?: boolean; mask?: boolean; rsv1?: boolean } = {}): Buffer {
  const data = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : Buffer.from(payload);
  const mask = o.mask ?? true;
  const len = data.length;
  const ext = len < 126 ? 0 : len < 65536 ? 2 : 8;
  const head = Buffer.alloc(2 + ext + (mask ? 4 : 0));
  head[0] = ((o.fin ?? true) ? 0x80 : 0) | (o.rsv1 === true ? 0x40 : 0) | opcode;
  const lenByte = ext === 0 ? len : ext === 2 ? 126 : 127;
  head[1] = (mask ? 0x80 : 0) | lenByte;
  if (ext === 2) head.writeUInt16BE(len, 2);
  if (ext === 8) head.writeBigUInt64BE(BigInt(len), 2);
  if (!mask) return Buffer.concat([head, data]);
  const key = randomBytes(4);
  key.copy(head, 2 + ext);
  const out = Buffer.alloc(len);
  for (let i = 0; i < len; i++) out[i] = data[i]! ^ key[i & 3]!;
  return Buffer.concat([head, out]);
}

/** A frame header claiming `len` payload bytes (masked), without the payload. */
export function frameHeader(opcode: number, len: number): Buffer {
  const head = Buffer.alloc(2 + 8 + 4);
  head[0] = 0x80 | opcode;
  head[1] = 0x80 | 127;
  head.writeBigUInt64BE(BigInt(len), 2);
  randomBytes(4).copy(head, 10);
  return head;
}

/** Parses the frames in `bytes` (unmasked server frames); a trailing partial frame is left out. */
export function parseFrames(bytes: Buffer): Frame[] {
  const out: Frame[] = [];
  let p = 0;
  while (p + 2 <= bytes.length) {
    const b0 = bytes[p]!;
    const b1 = bytes[p + 1]!;
    let len = b1 & 0x7f;
    let q = p + 2;
    if (len === 126) {
      if (q + 2 > bytes.length) break;
      len = bytes.readUInt16BE(q);
      q += 2;
    } else if (len === 127) {
      if (q + 8 > bytes.length) break;
      len = Number(bytes.readBigUInt64BE(q));
      q += 8;
    }
    if ((b1 & 0x80) !== 0) q += 4;
    if (q + len > bytes.length) break;
    out.push({ fin: (b0 & 0x80) !== 0, rsv1: (b0 & 0x40) !== 0, opcode: b0 & 0x0f, payload: bytes.subarray(q, q + len) });
    p = q + len;
  }
  return out;
}

/** A raw client that completed the handshake: `frames()` parses what came after the 101. */
export interface RawWs {
  client: RawClient;
  /** The 101 head as text. */
  head: string;
  /** Frames received so far. */
  frames(): Frame[];
  /** Waits (bounded) for a close frame and returns its code (and reason). */
  closeFrame(ms?: number): Promise<{ code: number; reason: string }>;
}

/** Connects to `port`, sends a valid handshake (plus `extra` header lines), and waits for the 101. */
export async function rawWs(port: number, extra = '', path = '/'): Promise<RawWs> {
  const client = await rawClient(port);
  const key = randomBytes(16).toString('base64');
  await client.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`);
  await waitFor(() => client.received.includes('\r\n\r\n') || client.isClosed, 3000, 'the handshake response');
  const end = client.received.indexOf('\r\n\r\n');
  const head = client.received.toString('latin1', 0, end);
  if (!head.startsWith('HTTP/1.1 101')) throw new Error(`handshake refused: ${head}`);
  const frames = (): Frame[] => parseFrames(client.received.subarray(end + 4));
  return {
    client,
    head,
    frames,
    async closeFrame(ms = 3000) {
      await within(
        (async () => {
          while (!frames().some((f) => f.opcode === 8)) {
            if (client.isClosed) throw new Error(`connection closed without a close frame; frames: ${JSON.stringify(frames().map((f) => f.opcode))}`);
            await new Promise<void>((r) => setImmediate(r));
          }
        })(),
        ms,
        'a close frame',
      );
      const f = frames().find((x) => x.opcode === 8)!;
      return { code: f.payload.length >= 2 ? f.payload.readUInt16BE(0) : 1005, reason: f.payload.subarray(2).toString('utf8') };
    },
  };
}

/**
 * Starts an echo server (`options`), sends `bytes` after a raw handshake (plus `extra` header
 * lines), and returns the close frame it answered with and the server's URL, once the server
 * closed the connection.
 */
export async function closeCodeFor(bytes: Buffer | Buffer[], options: WebSocketListenOptions = {}, extra = ''): Promise<{ code: number; reason: string; url: string }> {
  const { url, port } = await startWs(echo, options);
  const c = await rawWs(port, extra);
  for (const b of Array.isArray(bytes) ? bytes : [bytes]) await c.client.write(b);
  const { code, reason } = await c.closeFrame();
  await within(c.client.closed, 3000, 'the server to close the connection');
  return { code, reason, url };
}
