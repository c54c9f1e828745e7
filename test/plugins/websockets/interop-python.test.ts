/**
 * Interop with Python's `websockets` (Debian python3-websockets, run by /usr/bin/python3, not
 * the pyenv python first on PATH): Python as the client of our server and as the server of our
 * client, with and without permessage-deflate, text and binary, 1 byte to 8 MiB; and empty
 * messages and empty fragments under compression, with and without context takeover each way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WebSockets } from '../../../plugins/websockets/index.js';
import { echo, onCleanup, startWs, within } from '../../helpers/websockets.js';

const PYTHON = '/usr/bin/python3';
const PEERS = join(import.meta.dirname, 'peers');
const SIZES = [1, 125, 126, 65535, 65536, 1024 * 1024, 8 * 1024 * 1024];

function payload(n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = i & 0xff;
  return b;
}

function python(script: string, args: string[]): { child: ChildProcess; stdout: () => string; stderr: () => string } {
  const child = spawn(PYTHON, [join(PEERS, script), ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  onCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
  return { child, stdout: () => out, stderr: () => err };
}

describe('WebSockets interop: Python websockets as the client', () => {
  for (const compress of [false, true]) {
    it(`echoes text and binary, 1 byte to 8 MiB (compress ${compress})`, async () => {
      let serverClose: number | null = null;
      const { url } = await startWs(
        async (ws) => {
          try {
            await echo(ws);
          } finally {
            // 4000 is not a normal closure: iteration throws, the code stays readable.
            serverClose = ws.closeCode;
          }
        },
        { compress, subprotocols: ['chat'] },
      );
      const py = python('py_client.py', [`${url}/py`, compress ? '1' : '0', 'chat']);
      const [code] = (await within(once(py.child, 'exit'), 15_000, 'the python client')) as [number];
      expect(code, py.stderr() + py.stdout()).toBe(0);
      const seen = JSON.parse(py.stdout().trim().split('\n').pop()!) as { extensions: string[]; subprotocol: string; echoed: number; close_code: number };
      expect(seen).toEqual({ extensions: compress ? ['permessage-deflate'] : [], subprotocol: 'chat', echoed: SIZES.length * 2, close_code: 4000 });
      expect(serverClose).toBe(4000);
    });
  }
});

describe('WebSockets interop: Python websockets as the server', () => {
  for (const compress of [false, true]) {
    it(`our client echoes text and binary, 1 byte to 8 MiB (compress ${compress})`, async () => {
      const py = python('py_server.py', [compress ? '1' : '0']);
      await within(
        (async () => {
          while (!py.stdout().includes('\n')) await once(py.child.stdout!, 'data');
        })(),
        10_000,
        `the python server to start (${py.stderr()})`,
      );
      const port = Number(py.stdout().split('\n')[0]);
      const url = `ws://127.0.0.1:${port}/from-node?x=1`;
      await WebSockets.open(
        url,
        async (ws) => {
          expect(ws.compressed).toBe(compress);
          expect(ws.subprotocol).toBe('chat');
          await ws.send('path');
          expect(await ws.receive()).toBe(`/from-node?x=1 ${compress ? 'permessage-deflate' : ''} chat`);
          for (const n of SIZES) {
            const b = payload(n);
            await ws.send(b);
            const got = await ws.receive();
            expect(Buffer.compare(Buffer.from(got as Uint8Array), Buffer.from(b)), `binary ${n}`).toBe(0);
            const t = 'ü'.repeat(Math.max(1, n >> 1));
            await ws.send(t);
            expect(await ws.receive(), `text ${n}`).toBe(t);
          }
          await within(ws.ping('node'), 5000, 'pong from python');
        },
        { compress, subprotocols: ['chat'] },
      );
      // The server closing with its own code reaches us as that code.
      const err = await WebSockets.open(url, async (ws) => {
        await ws.send('close:4002');
        await ws.receive();
      }).catch((e: unknown) => e);
      expect(err).toMatchObject({ closeCode: 4002, reason: 'asked' });
    });
  }
});

/**
 * Empty messages under permessage-deflate (RFC 7692 §7.2.3.6: compressed, one 0x00 byte), each
 * side with and without context takeover, whole and in fragments that are empty: a message
 * after them must still inflate on both ends.
 */
describe('WebSockets interop: empty messages, compressed, with Python websockets', () => {
  const MODES = ['takeover', 'client_nct', 'server_nct', 'both_nct'];
  for (const mode of MODES) {
    it(`Python client sends empties and empty fragments, our server echoes them (${mode})`, async () => {
      const { url } = await startWs(echo, { compress: true });
      const py = python('py_empty_client.py', [`${url}/empty`, mode]);
      const [code] = (await within(once(py.child, 'exit'), 15_000, 'the python client')) as [number];
      expect(code, py.stderr() + py.stdout()).toBe(0);
      expect(JSON.parse(py.stdout().trim().split('\n').pop()!)).toMatchObject({ echoed: 16 });
    });

    it(`our client sends empties to a Python echo server and takes its empty fragments (${mode})`, async () => {
      const py = python('py_empty_server.py', [mode]);
      await within(
        (async () => {
          while (!py.stdout().includes('\n')) await once(py.child.stdout!, 'data');
        })(),
        10_000,
        `the python server to start (${py.stderr()})`,
      );
      const url = `ws://127.0.0.1:${Number(py.stdout().split('\n')[0])}/`;
      await WebSockets.open(
        url,
        async (ws) => {
          expect(ws.compressed).toBe(true);
          const sent: (string | Uint8Array)[] = ['abc', '', new Uint8Array(0), 'after the empty ones', '', 'x'.repeat(3000), new Uint8Array(0), '', 'last'];
          for (const m of sent) {
            await ws.send(m);
            const got = await ws.receive();
            if (typeof m === 'string') expect(got).toBe(m);
            else expect(Buffer.from(got as Uint8Array).equals(Buffer.from(m))).toBe(true);
          }
          await ws.send('frags');
          const got: unknown[] = [];
          for (;;) {
            const m = await ws.receive();
            if (m === 'frags done') break;
            got.push(typeof m === 'string' ? m : [...(m as Uint8Array)]);
          }
          expect(got).toEqual(['fragment', [], '', 'y', [2]]);
        },
        { compress: true },
      );
    });
  }
});
