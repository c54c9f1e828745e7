/**
 * The request commands and their methods: what `main` needs to route a command line before
 * loading the command's module.
 */

/** The request commands and their methods. */
export const REQUEST_COMMANDS: Readonly<Record<string, string>> = Object.freeze({
  get: 'GET',
  head: 'HEAD',
  post: 'POST',
  put: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
  query: 'QUERY',
  options: 'OPTIONS',
});
