/**
 * Benchmark server: switchyard as its users start it, `HTTP.serve(handler)` from the top-level
 * entry, so on the default preset (`presets.defaults`: every first-party plugin, their hooks
 * tapped), with a new `Response` per request as bench/servers/switchyard.ts (the kernel alone)
 * makes. See ./common.ts for the contract.
 */
import * as HTTP from '../../index.js';
import { announce, BODY, exitOnSignal, HOST, PORT } from './common.js';

const HEADERS = { 'Content-Type': 'text/plain' };

const server = await HTTP.serve(() => new HTTP.Response(200, BODY, { headers: HEADERS }), { host: HOST, port: PORT });
announce(server.port);
exitOnSignal(() => server.close());
