/**
 * The `Date` response field (RFC 9110 §6.6.1), formatted once per second instead of once per
 * response, and read without a clock call: the cached value is dropped by a timer at the next
 * second boundary (node's own HTTP servers do the same), so a response costs a variable read.
 * The timer is unref'd and set only when a response asks after the cache was dropped.
 */
let cachedValue: string | null = null;
let cachedField = '';

function refresh(): string {
  const now = Date.now();
  const ms = now % 1000;
  const value = new Date(now - ms).toUTCString();
  cachedValue = value;
  cachedField = `Date: ${value}\r\n`;
  setTimeout(dropCache, 1000 - ms).unref();
  return value;
}

function dropCache(): void {
  cachedValue = null;
}

/** The IMF-fixdate of the current second, as the `Date` field's value. */
export function httpDate(): string {
  return cachedValue ?? refresh();
}

/** `Date: <IMF-fixdate>\r\n` for the current second (the HTTP/1 serializer's form). */
export function dateField(): string {
  if (cachedValue === null) refresh();
  return cachedField;
}
