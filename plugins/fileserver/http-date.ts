/**
 * HTTP-date (RFC 9110 §5.6.7): the IMF-fixdate we send, and the three forms a recipient must
 * accept. `Date.parse` is not used: it reads the asctime form in local time.
 */

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `Sun, 06 Nov 1994 08:49:37 GMT` for a time in milliseconds (sub-second part dropped). */
export function formatHttpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

function utc(y: number, mon: string, d: number, hh: number, mm: number, ss: number): number | null {
  const m = MONTHS.indexOf(mon);
  if (m < 0 || d < 1 || d > 31 || hh > 23 || mm > 59 || ss > 60) return null;
  const t = Date.UTC(y, m, d, hh, mm, Math.min(ss, 59));
  return Number.isFinite(t) ? t : null;
}

const IMF = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{2}) ([A-Z][a-z]{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const RFC850 = /^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\d{2})-([A-Z][a-z]{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const ASCTIME = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/;

/** Milliseconds since the epoch of an HTTP-date in any of its three forms, or `null` when invalid. */
export function parseHttpDate(value: string): number | null {
  const v = value.trim();
  let m = IMF.exec(v);
  if (m !== null) return utc(+m[3]!, m[2]!, +m[1]!, +m[4]!, +m[5]!, +m[6]!);
  m = RFC850.exec(v);
  if (m !== null) {
    // Two-digit years: RFC 9110 says a year that appears more than 50 years ahead is in the past century.
    let y = 2000 + +m[3]!;
    if (y > new Date().getUTCFullYear() + 50) y -= 100;
    return utc(y, m[2]!, +m[1]!, +m[4]!, +m[5]!, +m[6]!);
  }
  m = ASCTIME.exec(v);
  if (m !== null) return utc(+m[6]!, m[1]!, +m[2]!.trim(), +m[3]!, +m[4]!, +m[5]!);
  return null;
}
