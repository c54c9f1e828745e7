/**
 * Benchmark server: fastify 5 with default settings, logger off. See ./common.ts.
 */
import Fastify from 'fastify';
import type { AddressInfo } from 'node:net';
import { announce, BODY, exitOnSignal, HOST, PORT } from './common.js';

const app = Fastify({ logger: false, keepAliveTimeout: 120_000 });
app.get('/', (_req, reply) => {
  reply.type('text/plain').send(BODY);
});

await app.listen({ host: HOST, port: PORT });
announce((app.server.address() as AddressInfo).port);
exitOnSignal();
