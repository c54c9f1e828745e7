/**
 * `workers`: real node:cluster programs (fixtures/workers.ts run with `node --import tsx`):
 * the workers share the port, a killed worker is replaced after a backoff with one log line,
 * `close()` drains every worker, `reload()` and SIGHUP replace every worker while a load loop
 * counts zero failures, a reload whose new code throws stops with the old workers serving, a
 * program that throws at start in its workers gives up after a bound
 * and says why, and bad `workers` values are refused before anything is forked.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import http from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ArgumentError, Response, Server, serve, listen, serveFetch } from '../../../kernel/index.js';
import { killAfter, onCleanup } from '../../helpers/cleanup.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/workers.ts', import.meta.url));
/** Loading the library through tsx in three processes on a busy machine. */
const START_MS = 20_000;

interface Program {
  child: ChildProcessWithoutNullStreams;
  out: () => string;
  err: () => string;
  /** Resolves with the first match of `re` in stdout (or stderr), now or once it is printed. */
  waitFor: (re: RegExp, where?: 'out' | 'err', ms?: number) => Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
}

function start(env: Record<string, string> = {}): Program {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], { cwd: ROOT, env: { ...process.env, ...env }, stdio: 'pipe' });
  killAfter(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = (re: RegExp, where: 'out' | 'err' = 'out', ms = START_MS): Promise<RegExpMatchArray> =>
    new Promise((resolve, reject) => {
      const stream = where === 'out' ? child.stdout : child.stderr;
      const check = (): void => {
        const m = re.exec(where === 'out' ? out : err);
        if (m === null) return;
        done();
        resolve(m);
      };
      const onExit = (): void => {
        done();
        reject(new Error(`the program exited before printing ${re}\nstdout:\n${out}\nstderr:\n${err}`));
      };
      const t = setTimeout(() => {
        done();
        reject(new Error(`${re} not printed within ${ms} ms\nstdout:\n${out}\nstderr:\n${err}`));
      }, ms);
      const done = (): void => {
        clearTimeout(t);
        stream.off('data', check);
        child.off('exit', onExit);
      };
      stream.on('data', check);
      child.once('exit', onExit);
      check();
    });
  return { child, out: () => out, err: () => err, waitFor, exited };
}

async function ready(p: Program): Promise<{ port: number; pids: number[] }> {
  const m = await p.waitFor(/^ready (\d+) ([\d,]+)$/m);
  return { port: Number(m[1]), pids: m[2]!.split(',').map(Number) };
}

/** GET `path`; `keepAlive` false sends `Connection: close` (a new connection each time). */
function get(port: number, path: string, agent: http.Agent | false): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent, headers: agent === false ? { connection: 'close' } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

describe('workers', () => {
  it('runs N workers on one port, answering from more than one process', async () => {
    const p = start({ SWY_WORKERS: '2' });
    const { port, pids } = await ready(p);
    expect(pids).toHaveLength(2);
    const seen = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const r = await get(port, '/', false);
      expect(r.status).toBe(200);
      seen.add(r.body);
    }
    expect([...seen].map(Number).sort()).toEqual([...pids].sort());
    p.child.stdin.write('close\n');
    await p.waitFor(/^closed$/m);
    expect(await p.exited).toBe(0);
  }, 60_000);

  it.each(['listen', 'fetch'])(
    '%s takes workers as serve does',
    async (api) => {
      const p = start({ SWY_WORKERS: '2', SWY_API: api });
      const { port, pids } = await ready(p);
      const seen = new Set<number>();
      for (let i = 0; i < 6; i++) seen.add(Number((await get(port, '/', false)).body));
      expect([...seen].sort()).toEqual([...pids].sort());
      p.child.stdin.write('close\n');
      expect(await p.exited).toBe(0);
    },
    60_000,
  );

  it('replaces a killed worker after a backoff, with one log line', async () => {
    const p = start({ SWY_WORKERS: '2' });
    const { port, pids } = await ready(p);
    const victim = pids[0]!;
    process.kill(victim, 'SIGKILL');
    const line = await p.waitFor(new RegExp(`^switchyard: worker ${victim} died \\(signal SIGKILL\\); starting another in (\\d+) ms$`, 'm'), 'err');
    expect(Number(line[1])).toBeGreaterThanOrEqual(100);
    const fresh = Number((await p.waitFor(/^listening (\d+)$/m))[1]);
    expect(fresh).not.toBe(victim);
    // Both serve: the new one and the one left.
    const seen = new Set<number>();
    for (let i = 0; i < 10; i++) seen.add(Number((await get(port, '/', false)).body));
    expect([...seen].sort()).toEqual([fresh, pids[1]!].sort());
    expect(p.err().match(/^switchyard: /gm)).toHaveLength(1);
    p.child.stdin.write('close\n');
    expect(await p.exited).toBe(0);
  }, 60_000);

  it('close() drains every worker: a slow request in flight finishes', async () => {
    const p = start({ SWY_WORKERS: '2' });
    const { port } = await ready(p);
    const slow = get(port, '/slow', false);
    await p.waitFor(/^slow \d+$/m);
    p.child.stdin.write('close\n');
    const r = await slow;
    expect(r.status).toBe(200);
    expect(r.body).toMatch(/^slow done \d+$/);
    await p.waitFor(/^closed$/m);
    expect(await p.exited).toBe(0);
    expect(p.err()).not.toMatch(/died|ended before/);
  }, 60_000);

  it('reload() and SIGHUP replace every worker with no failed request under load', async () => {
    const p = start({ SWY_WORKERS: '2' });
    const { port, pids: before } = await ready(p);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    let ok = 0;
    const failures: string[] = [];
    const seen = new Set<number>();
    let running = true;
    const loop = async (a: http.Agent | false): Promise<void> => {
      while (running) {
        try {
          const r = await get(port, '/', a);
          if (r.status !== 200) failures.push(`status ${r.status}`);
          else {
            ok++;
            seen.add(Number(r.body));
          }
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    };
    // Kept-alive connections (4) and a new connection per request (2).
    const loops = [loop(agent), loop(agent), loop(agent), loop(agent), loop(false), loop(false)];
    try {
      p.child.stdin.write('reload\n');
      await p.waitFor(/^reloaded$/m);
      const middle = new Set(
        p
          .out()
          .match(/^listening (\d+)$/gm)!
          .map((l) => Number(l.split(' ')[1])),
      );
      expect(middle.size).toBe(2);
      p.child.kill('SIGHUP');
      await p.waitFor(/(reload done[^]*){2}/, 'err');
    } finally {
      running = false;
      await Promise.all(loops);
      agent.destroy();
    }
    const fresh = p
      .out()
      .match(/^listening (\d+)$/gm)!
      .map((l) => Number(l.split(' ')[1]));
    expect(fresh).toHaveLength(4);
    for (const pid of before) expect(fresh).not.toContain(pid);
    // The requests reached old and new workers alike, and none failed.
    expect(seen.size).toBeGreaterThanOrEqual(4);
    expect(ok).toBeGreaterThan(100);
    expect(failures).toEqual([]);
    expect(p.err()).not.toMatch(/died|ended before/);
    p.child.stdin.write('close\n');
    expect(await p.exited).toBe(0);
  }, 60_000);

  it('a reload gives an event stream on an old worker closeGracePeriod, then ends it cleanly', async () => {
    const GRACE = 600;
    const p = start({ SWY_WORKERS: '1', SWY_GRACE: String(GRACE) });
    const { port, pids } = await ready(p);
    const events = await new Promise<http.IncomingMessage>((resolve, reject) => http.get({ host: '127.0.0.1', port, path: '/events', agent: false }, resolve).on('error', reject));
    let body = '';
    events.setEncoding('utf8');
    events.on('data', (c: string) => (body += c));
    const ended = new Promise<number>((resolve, reject) => {
      events.once('end', () => resolve(performance.now()));
      events.once('error', reject);
    });
    p.child.stdin.write('reload\n');
    const fresh = Number((await p.waitFor(/^listening (\d+)$/m))[1]);
    const drainFrom = performance.now();
    // The new worker serves while the old one still holds the stream (the old one may take a
    // request or two more before its drain closes its listener).
    let answered = 0;
    for (let i = 0; i < 50 && answered !== fresh; i++) answered = Number((await get(port, '/', false)).body);
    expect(answered).toBe(fresh);
    const endedAt = await ended;
    expect(body).toBe(`data: ${pids[0]}\n\n`);
    expect(endedAt - drainFrom).toBeGreaterThanOrEqual(GRACE - 200);
    await p.waitFor(/^reloaded$/m);
    p.child.stdin.write('close\n');
    expect(await p.exited).toBe(0);
  }, 60_000);

  it('a reload whose new worker fails to start stops there, and the old workers keep serving', async () => {
    const broken = join(await mkdtemp(join(tmpdir(), 'swy-workers-')), 'broken');
    onCleanup(() => rm(dirname(broken), { recursive: true, force: true }));
    const p = start({ SWY_WORKERS: '2', SWY_BROKEN: broken });
    const { port, pids } = await ready(p);
    await writeFile(broken, '');
    p.child.stdin.write('reload\n');
    await p.waitFor(/^reload failed: WorkerStartError: worker \d+ ended \(exit code 1\) before it listened$/m);
    expect(p.err()).toContain('boom in the new code');
    expect(p.err()).toMatch(/^switchyard: reload stopped: the new worker \d+ did not start \(.*\); the 2 workers serving keep serving$/m);
    const seen = new Set<number>();
    for (let i = 0; i < 6; i++) seen.add(Number((await get(port, '/', false)).body));
    expect([...seen].sort()).toEqual([...pids].sort());
    p.child.stdin.write('close\n');
    expect(await p.exited).toBe(0);
  }, 60_000);

  it('gives up on workers that throw at start, after a bounded number of tries, saying why', async () => {
    const p = start({ SWY_WORKERS: '2', SWY_MODE: 'throw' });
    const code = await p.exited;
    expect(code).toBe(1);
    const err = p.err();
    expect(err).toContain('boom at start');
    const retries = err.match(/^switchyard: worker \d+ ended before it listened \(exit code 1\); starting another in \d+ ms$/gm) ?? [];
    expect(retries.length).toBeLessThanOrEqual(4);
    expect(err).toMatch(/^switchyard: 5 workers in a row ended before they listened \(the last: exit code 1\); giving up: see the workers' errors above$/m);
    // The backoff grew: no two restarts at the same delay after the first pair.
    const delays = retries.map((l) => Number(/in (\d+) ms/.exec(l)![1]));
    expect(delays).toEqual([...delays].sort((a, b) => a - b));
    expect(new Set(delays).size).toBe(delays.length);
    expect(p.out()).toMatch(/^failed: workers could not be started: 5 workers in a row/m);
  }, 60_000);

  it('refuses bad workers values, naming the option, before forking anything', async () => {
    const ok = (): Response => new Response(200, 'x');
    for (const bad of [0, -1, 1.5, 1025, Number.NaN, '2', 'all', null, true, {}]) {
      const e = await serve(ok, { workers: bad as never, port: 0 }).catch((err: unknown) => err);
      expect(e, String(bad)).toBeInstanceOf(ArgumentError);
      expect((e as Error).message).toMatch(/^workers must be a whole number from 1 to 1024, or 'auto' \(one per core\), got /);
    }
    await expect(listen(() => undefined, { workers: 0, port: 0 })).rejects.toThrow(/^workers must be/);
    await expect(serveFetch(() => new globalThis.Response('x'), { workers: -2, port: 0 })).rejects.toThrow(/^workers must be/);
    await expect(serve(ok, { workers: 2, listener: (await import('node:net')).createServer() })).rejects.toThrow(/workers cannot be combined with listener/);
    await expect(serve(ok, { workers: 2, signals: ['SIGHUP'] })).rejects.toThrow(/^signals: SIGHUP reloads the workers/);
    await expect(serve(ok, { workers: 2, prot: 1 } as never)).rejects.toThrow(/unknown server option "prot"/);
    await expect(serve(ok, { workers: 2, workerLog: 'stderr' as never })).rejects.toThrow(/^workerLog must be a function \(line: string\) => void, got the string "stderr"$/);
    await expect(serve(ok, { workerLog: () => undefined, port: 0 })).rejects.toThrow(/^workerLog is an option of serve\(\), listen\(\) and serveFetch\(\) with workers/);
    expect(() => new Server({ handler: ok, workers: 2 } as never)).toThrow(/^workers is an option of serve\(\), listen\(\) and serveFetch\(\) with workers/);
  });
});
