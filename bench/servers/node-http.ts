/**
 * Benchmark server: bare `node:http`, the baseline. See ./common.ts for the contract.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { announce, BODY, BODY_LENGTH, exitOnSignal, HOST, PORT } from './common.js';

const HEAD = { 'Content-Type': 'text/plain', 'Content-Length': BODY_LENGTH };

const server = createServer((_req, res) => {
  res.writeHead(200, HEAD);
  res.end(BODY);
});
// Idle keep-alive connections must survive the memory scenario (default is 5 s).
server.keepAliveTimeout = 120_000;

server.listen(PORT, HOST, () => announce((server.address() as AddressInfo).port));
exitOnSignal();
