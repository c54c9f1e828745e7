/**
 * A request handler and a stream handler on one server
 * each, from the top-level API. Try:
 *   curl http://127.0.0.1:8080/hello?name=you
 *   curl -d 'some body' http://127.0.0.1:8080/echo
 *   curl -N http://127.0.0.1:8081/count     (a streamed, chunked response)
 */
import * as HTTP from '../index.js';

const port = Number(process.env.PORT ?? 8080);
const host = process.env.HOST ?? '127.0.0.1';

const api = await HTTP.serve(
  (req) => {
    const url = new HTTP.URI(req.target);
    if (url.path === '/echo') {
      return new HTTP.Response(200, req.body, { headers: { 'Content-Type': req.headers.get('Content-Type') ?? 'application/octet-stream' } });
    }
    const name = HTTP.queryParams(url).name ?? 'world';
    return new HTTP.Response(200, `hello, ${name}\n${req.method} ${req.target} from switchyard\n`, {
      headers: { 'Content-Type': 'text/plain; charset=utf-8' },
    });
  },
  { host, port },
);

const streams = await HTTP.listen(
  async (stream) => {
    const req = await stream.startRead();
    stream.setHeader('Content-Type', 'text/plain; charset=utf-8');
    await stream.write(`counting for ${String(stream.peerAddr())} (${req.target})\n`);
    for (let i = 1; i <= 5; i++) {
      await new Promise((r) => setTimeout(r, 200));
      await stream.write(`${i}\n`);
    }
    await stream.closeWrite();
  },
  { host, port: port === 0 ? 0 : port + 1 },
);

console.log(`switchyard example: request handler on http://${host}:${api.port}/  stream handler on http://${host}:${streams.port}/count  (Ctrl-C to stop)`);

process.once('SIGINT', () => {
  console.log('\nclosing gracefully');
  void Promise.all([api.close(), streams.close()]).then(() => process.exit(0));
});
