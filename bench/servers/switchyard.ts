/**
 * Benchmark server: switchyard's own HTTP/1.1 server (`serve` from the kernel), default
 * options. See ./common.ts for the contract.
 */
import { Response, serve } from '../../kernel/index.js';
import { announce, BODY, exitOnSignal, HOST, PORT } from './common.js';

const HEADERS = { 'Content-Type': 'text/plain' };

const server = await serve(() => new Response(200, BODY, { headers: HEADERS }), { host: HOST, port: PORT });
announce(server.port);
exitOnSignal(() => server.close());
