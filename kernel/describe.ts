/**
 * Short descriptions of values for error messages (`a plain object`, `the string "x"`), one
 * wording for every check of the kernel's options and arguments.
 */

/** What `value` is, for an error message that says what was passed instead. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'function') return value.name ? `a function "${value.name}"` : 'an anonymous function';
  if (typeof value === 'object') {
    const ctor = (value as object).constructor?.name;
    return ctor && ctor !== 'Object' ? `a ${ctor}` : 'a plain object';
  }
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  return String(value);
}
