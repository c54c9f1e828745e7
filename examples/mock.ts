/**
 * Plugin `mock`: client code tested without the network. Interceptors answer requests to
 * `https://api.example.com` (a 503 the retries plugin retries, a redirect the redirects plugin
 * follows, an unmatched request that fails loudly); then a real exchange with a local server
 * is recorded to a file and replayed with that server closed.
 *
 *   node --import tsx examples/mock.ts
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as HTTP from '../index.js';

/** The code under test: it takes a client, as code that is meant to be tested does. */
async function userName(id: number, client: HTTP.Client): Promise<string> {
  const res = await HTTP.get(`https://api.example.com/users/${id}`, { client, retryDelayScale: 1 });
  return (res.json() as { name: string }).name;
}

const mocks = HTTP.mock();
const API = 'https://api.example.com';
mocks.intercept({ origin: API, path: '/users/1' }).reply(503, 'busy'); // the first answer...
mocks.intercept({ origin: API, path: '/users/1' }).reply(302, null, { headers: { Location: '/people/1' } }); // ...then a redirect
mocks.intercept({ origin: API, path: '/people/1' }).reply(200, { name: 'Ada' });

console.log(`userName(1): ${await userName(1, mocks.client())}`);
mocks.assertNoPending();
try {
  await userName(2, mocks.client());
} catch (err) {
  if (!(err instanceof HTTP.MockNotMatchedError)) throw err;
  console.log(`userName(2): ${err.name} for ${err.method} ${err.url}`);
}
await mocks.close();

// Record a real exchange, then replay it with the server gone.
const dir = await mkdtemp(join(tmpdir(), 'switchyard-mock-'));
const file = join(dir, 'exchanges.json');
const server = await HTTP.serve(() => new HTTP.Response(200, 'hello from the real server'), { host: '127.0.0.1', port: 0 });
const url = `http://127.0.0.1:${server.port}/hello`;

const recorder = HTTP.mock({ record: file });
await HTTP.get(url, { client: recorder.client() });
await recorder.close(); // writes the file
await server.close();

const replayer = HTTP.mock({ replay: file });
const replayed = await HTTP.get(url, { client: replayer.client() });
console.log(`replayed with the server closed: ${replayed.status} "${replayed.text()}"`);
await replayer.close();
await rm(dir, { recursive: true });
