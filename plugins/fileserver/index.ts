/**
 * Static files (the reference's `fileserver`, `servefile`, `servecontent`) and the
 * `fileserver` plugin.
 *
 * - {@link fileServer}: a request handler for the files under a root directory.
 * - {@link serveFile}: one file (or a directory's index file) for a request.
 * - {@link serveContent}: bytes or an open file with conditional (RFC 9110 §13) and range
 *   (§14) handling.
 * - {@link sniffContentType}: the WHATWG MIME-sniffing rules used when a name gives no type.
 * - {@link fileserver}: the plugin mounting directories in front of a server's handler.
 * - {@link decodeRequestPath}, {@link isDotPath}: the path rules it applies, for code that
 *   lists or serves files its own way.
 *
 * Files are streamed from disk with positional reads (never read whole), so a response is
 * the same over HTTP/1.1 and HTTP/2.
 */
export { fileServer, type FileServerOptions, type DotfilesPolicy } from './file-server.js';
export { serveFile, type ServeFileOptions, type EtagOption } from './serve-file.js';
export { serveContent, type ServeContentOptions, type ContentSource } from './serve-content.js';
export { sniffContentType, SNIFF_LENGTH } from './sniff.js';
export { FileBody } from './file-body.js';
export { weakStatEtag } from './etag.js';
export { parseHttpDate, formatHttpDate } from './http-date.js';
export { decodeRequestPath, isDotPath, type DecodedPath } from './path-safety.js';
export { fileserver, type FileServerMount, type FileServerPluginOptions } from './plugin.js';
