/**
 * Benchmark server: the Hono app (./hono-app.ts) on Hono's own Node adapter,
 * `@hono/node-server` with its defaults (it swaps in its light global Request/Response). See
 * ./common.ts for the contract.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { announce, exitOnSignal, HOST, PORT } from './common.js';
import { app } from './hono-app.js';

const server = serve({ fetch: app.fetch, hostname: HOST, port: PORT }, (info: AddressInfo) => announce(info.port));
exitOnSignal(() => server.close());
