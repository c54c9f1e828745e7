/**
 * A user's script, run as its own process by the process-exit tests (`node --import tsx`):
 * GETs each URL on its command line in turn with the top-level API (call options as JSON in
 * SWY_OPTIONS), prints `status body` per response, and ends without closing anything, as a
 * script using `fetch` would. The process must then exit on its own.
 */
import * as HTTP from '../../../index.js';

const options = JSON.parse(process.env.SWY_OPTIONS ?? '{}') as HTTP.CallOptions;
for (const url of process.argv.slice(2)) {
  const res = await HTTP.get(url, options);
  console.log(`${res.status} ${res.text()}`);
}
