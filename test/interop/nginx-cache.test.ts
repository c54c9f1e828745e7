/**
 * The cache plugin against nginx from Debian (/usr/sbin/nginx) serving static files:
 * `expires` (Cache-Control max-age and Expires), its ETag and Last-Modified validators (304 on
 * revalidation), `add_header Cache-Control` (no-store) and `add_header Vary`. nginx's access log
 * counts what reached it.
 */
import { mkdir, readFile, rm, writeFile, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, createKernel, type Kernel } from '../../kernel/index.js';
import { cache, MemoryStore } from '../../plugins/index.js';
import { nginxHttpCommon, nginxPreamble, startNginx, stopPeer, tempDir, type Peer } from '../helpers/peers.js';

let dir = '';
let nginx: Peer | null = null;
let kernel: Kernel | null = null;
let client: Client | null = null;
let base = '';

beforeAll(async () => {
  dir = await tempDir('swy-nginx-cache-');
  await mkdir(join(dir, 'tmp'), { mode: 0o755 });
  for (const d of ['exp', 'etag', 'ns', 'vary']) {
    await mkdir(join(dir, 'www', d), { recursive: true });
    await writeFile(join(dir, 'www', d, 'a.txt'), `${d} one\n`);
  }
  const started = await startNginx(
    dir,
    1,
    ([port]) => `${nginxPreamble(dir)}
http {${nginxHttpCommon(dir)}
  server {
    listen 127.0.0.1:${port};
    access_log ${dir}/access.log;
    root ${dir}/www;
    location /exp/ { expires 1h; }
    location /etag/ { expires epoch; }
    location /ns/ { add_header Cache-Control "no-store"; }
    location /vary/ { add_header Cache-Control "public, max-age=600"; add_header Vary "X-Lang"; }
  }
}
`,
  );
  nginx = started.peer;
  base = `http://127.0.0.1:${started.ports[0]}`;
  kernel = await createKernel().register(cache, { store: new MemoryStore() }).ready();
  client = new Client({ kernel });
});

afterAll(async () => {
  client?.close();
  await kernel?.close();
  await stopPeer(nginx);
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

let sentinels = 0;

/**
 * How many requests for `path` nginx logged: first a request of its own (outside the cache),
 * whose log line, once written, follows those of every earlier request (one worker, one
 * connection: nginx logs a request before it reads the next).
 */
async function served(path: string): Promise<number> {
  const mark = `/exp/a.txt?sentinel=${++sentinels}`;
  await client!.get(`${base}${mark}`, { cache: false });
  let log: string;
  for (;;) {
    log = await readFile(join(dir, 'access.log'), 'utf8').catch(() => '');
    if (log.includes(` ${mark} `)) break;
    await new Promise<void>((r) => setImmediate(r));
  }
  return log.split('\n').filter((l) => l.includes(` ${path} `)).length;
}

describe('cache: nginx', () => {
  it('expires 1h: the second GET is a hit and never reaches nginx', async () => {
    const a = await client!.get(`${base}/exp/a.txt`);
    expect(a.headers.get('Cache-Control')).toBe('max-age=3600');
    const b = await client!.get(`${base}/exp/a.txt`);
    expect(b.cacheStatus).toBe('hit');
    expect(b.text()).toBe('exp one\n');
    expect(await served('/exp/a.txt')).toBe(1);
  });

  it('expires epoch (no-cache) with ETag: revalidated by 304, then a changed file is fetched anew', async () => {
    await client!.get(`${base}/etag/a.txt`);
    const b = await client!.get(`${base}/etag/a.txt`);
    expect(b.cacheStatus).toBe('revalidated');
    expect(b.status).toBe(200);
    expect(b.text()).toBe('etag one\n');
    const file = join(dir, 'www', 'etag', 'a.txt');
    await writeFile(file, 'etag two, longer\n');
    const later = new Date(Date.now() + 5000);
    await utimes(file, later, later);
    const c = await client!.get(`${base}/etag/a.txt`);
    expect(c.cacheStatus).toBe('miss');
    expect(c.text()).toBe('etag two, longer\n');
    expect(await served('/etag/a.txt')).toBe(3);
  });

  it('add_header Cache-Control no-store: never stored', async () => {
    await client!.get(`${base}/ns/a.txt`);
    expect((await client!.get(`${base}/ns/a.txt`)).cacheStatus).toBe('miss');
    expect(await served('/ns/a.txt')).toBe(2);
  });

  it('add_header Vary: one stored variant per X-Lang value', async () => {
    const get = (lang: string) => client!.get(`${base}/vary/a.txt`, { headers: { 'X-Lang': lang } });
    expect((await get('en')).cacheStatus).toBe('miss');
    expect((await get('fr')).cacheStatus).toBe('miss');
    expect((await get('en')).cacheStatus).toBe('hit');
    expect((await get('fr')).cacheStatus).toBe('hit');
    expect(await served('/vary/a.txt')).toBe(2);
  });
});
