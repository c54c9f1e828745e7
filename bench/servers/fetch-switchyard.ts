/**
 * Benchmark server: the Hono app (./hono-app.ts) on switchyard, `HTTP.serveFetch(app.fetch)`
 * from the top-level entry (the default preset, as users start it). See ./common.ts for the contract.
 */
import * as HTTP from '../../index.js';
import { announce, exitOnSignal, HOST, PORT } from './common.js';
import { app } from './hono-app.js';

const server = await HTTP.serveFetch(app.fetch, { host: HOST, port: PORT });
announce(server.port);
exitOnSignal(() => server.close());
