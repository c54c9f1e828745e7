/**
 * Plugin `cookies`: a client with a `CookieJar` stores the `Set-Cookie` headers it receives
 * (also on redirect responses) and sends the matching cookies back on later requests.
 * Starts its own server on 127.0.0.1, talks to it, prints what happened and exits.
 *
 *   node --import tsx examples/cookies.ts
 */
import * as HTTP from '../index.js';

const server = await HTTP.serve(
  (req) => {
    const path = new HTTP.URI(req.target).path;
    if (path === '/login') {
      // Cookies set on a redirect are stored before the redirect is followed.
      return new HTTP.Response(302, '', {
        headers: [
          ['Location', '/home'],
          ['Set-Cookie', 'session=abc123; Path=/; HttpOnly'],
          ['Set-Cookie', 'theme=dark; Max-Age=3600'],
        ],
      });
    }
    const seen = HTTP.getCookies(req).map((c) => `${c.name}=${c.value}`);
    return new HTTP.Response(200, `${path} saw cookies: ${seen.length > 0 ? seen.join(', ') : '(none)'}`);
  },
  { host: '127.0.0.1', port: 0 },
);
const base = `http://127.0.0.1:${server.port}`;

// Cookies are off unless a jar is given: to a Client (as here) or per call ({ cookiejar }).
const jar = new HTTP.Cookies.CookieJar();
const client = new HTTP.Client({ kernel: HTTP.getDefaultKernel(), cookiejar: jar });

console.log((await client.get(`${base}/login`)).text());
console.log((await client.get(`${base}/profile`)).text());
console.log('without the jar:', (await client.get(`${base}/profile`, { cookiejar: false })).text());

const stored = HTTP.Cookies.getCookies(jar, 'http:', '127.0.0.1', '/');
console.log('jar holds:', stored.map((c) => `${c.name}${c.httpOnly ? ' (HttpOnly)' : ''}`).join(', '));

client.close();
await server.close();
