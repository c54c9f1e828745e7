/**
 * The `Date` response field, formatted once per second instead of once per response.
 */
let cachedSecond = -1;
let cachedField = '';

/** `Date: <IMF-fixdate>\r\n` for now (RFC 9110 §6.6.1), cached for the current second. */
export function dateField(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== cachedSecond) {
    cachedSecond = second;
    cachedField = `Date: ${new Date(second * 1000).toUTCString()}\r\n`;
  }
  return cachedField;
}
