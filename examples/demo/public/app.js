// The demo page: each section talks to one feature of the switchyard server behind it.
'use strict';

const $ = (id) => document.getElementById(id);

function show(el, text) {
  el.textContent = text;
}

function append(list, text, max = 30) {
  const li = document.createElement('li');
  li.textContent = text;
  list.prepend(li);
  while (list.children.length > max) list.lastChild.remove();
}

// Router: JSON from /api/items/{id}.
$('api-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const id = encodeURIComponent($('api-id').value);
  const res = await fetch(`/api/items/${id}`);
  show($('api-result'), `${res.status} ${res.statusText}\n${JSON.stringify(await res.json(), null, 2)}`);
});

// Server-sent events.
const events = new EventSource('/events');
events.addEventListener('tick', (e) => {
  const d = JSON.parse(e.data);
  append($('sse-list'), `#${e.lastEventId} ${d.time}  requests=${d.requests} chat=${d.chatClients}`);
});
events.onerror = () => append($('sse-list'), '(connection lost, the browser retries)');

// WebSocket chat.
const wsUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/chat`;
const chat = new WebSocket(wsUrl);
chat.onopen = () => append($('chat-log'), `(connected, extensions: ${chat.extensions || 'none'})`);
chat.onmessage = (e) => append($('chat-log'), String(e.data));
chat.onclose = (e) => append($('chat-log'), `(closed ${e.code})`);
$('chat-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = $('chat-input').value;
  if (text !== '' && chat.readyState === WebSocket.OPEN) chat.send(text);
  $('chat-input').value = '';
});

// Multipart upload: the server answers with the parts it parsed.
$('upload-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const res = await fetch('/upload', { method: 'POST', body: new FormData($('upload-form')) });
  show($('upload-result'), `${res.status}\n${JSON.stringify(await res.json(), null, 2)}`);
});

// A Range request for the first 16 bytes of the download.
$('range-button').addEventListener('click', async () => {
  const res = await fetch('/files/sample.bin', { headers: { Range: 'bytes=0-15' } });
  const bytes = new Uint8Array(await res.arrayBuffer());
  show($('range-result'), `${res.status} Content-Range: ${res.headers.get('Content-Range')}\n${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join(' ')}`);
});

// The protocol, as the server saw this page's requests (h2 over TLS, by ALPN; h2c is the
// cleartext form, which browsers do not speak).
fetch('/api/whoami')
  .then((res) => res.json())
  .then(({ protocol }) => {
    const name = protocol === 'HTTP/2' ? ` (${location.protocol === 'https:' ? 'h2' : 'h2c'})` : '';
    show($('protocol'), `Loaded over ${protocol}${name} from ${location.origin}`);
  })
  .catch((err) => show($('protocol'), `Page loaded from ${location.origin} (protocol unknown: ${err.message})`));
