/**
 * The `fileserver` plugin: serves directories in front of any handler. Each mount taps
 * `server.onRequest` (before the router) and answers GET and HEAD requests under its prefix
 * for files that exist; a missing file (with `fallthrough`, the default) and other methods go
 * on to the router or handler. Registered without mounts (as in `presets.defaults`) it taps
 * nothing and costs nothing; `fileServer`, `serveFile` and `serveContent` work without it.
 */
import { ArgumentError, Response, Stage, definePlugin, type Request } from '../../kernel/index.js';
import { INVALID, compileFileServer, type FileServerOptions } from './file-server.js';
import { MISSING, badPath } from './serve-file.js';

const NAME = 'fileserver';

/** One served directory: `root`, the URL `prefix` it answers under (default `/`), and the file server's options. */
export interface FileServerMount extends FileServerOptions {
  /** The directory to serve; must exist (else `ArgumentError` at boot). */
  root: string;
  /**
   * With true (default), a missing file, a path no file can have (`..`, `%2F`, …) and methods
   * other than GET/HEAD go on to the router or handler; with false the mount answers them
   * itself (404, 400, 405).
   */
  fallthrough?: boolean;
}

/** Options of the `fileserver` plugin: one mount given inline, or a list in `mounts`. */
export interface FileServerPluginOptions extends Partial<FileServerMount> {
  /** Several mounts, tried in order (more specific prefixes first). */
  mounts?: FileServerMount[];
}

/** The `fileserver` plugin (see the module comment). */
export const fileserver = definePlugin({
  name: NAME,
  register(kernel, options: FileServerPluginOptions) {
    if (typeof options !== 'object' || options === null) throw new ArgumentError('register(fileserver, …): options must be an object');
    const { mounts: list, ...inline } = options;
    const mounts: FileServerMount[] = [];
    if (list !== undefined) {
      if (!Array.isArray(list)) throw new ArgumentError('register(fileserver, …): mounts must be an array of { root, prefix?, … }');
      mounts.push(...list);
    }
    if (inline.root !== undefined) mounts.push(inline as FileServerMount);
    else if (Object.keys(inline).length > 0) throw new ArgumentError('register(fileserver, …): options other than mounts need a root');
    if (mounts.length === 0) return;
    const compiled = mounts.map((m, i) => {
      if (typeof m !== 'object' || m === null) throw new ArgumentError(`register(fileserver, …): mounts[${i}] must be an object`);
      if (m.fallthrough !== undefined && typeof m.fallthrough !== 'boolean') throw new ArgumentError(`register(fileserver, …): mounts[${i}].fallthrough must be a boolean`);
      const { root, fallthrough, ...rest } = m;
      return { fs: compileFileServer(root, rest, 'register(fileserver, …)'), fallthrough: fallthrough ?? true };
    });
    kernel.hooks.server.onRequest.tapPromise({ name: NAME, stage: Stage.ROUTER - 10 }, async (req: Request): Promise<Response | void> => {
      for (const m of compiled) {
        if (m.fallthrough && req.method !== 'GET' && req.method !== 'HEAD') continue;
        const res = await m.fs.tryServe(req);
        if (res === null) continue;
        if (res === MISSING) {
          if (m.fallthrough) continue;
          return new Response(404, null);
        }
        if (res === INVALID) {
          // A path no file can have (`%2F`, `..`): with fallthrough it may still be a route's.
          if (m.fallthrough) continue;
          return badPath();
        }
        return res;
      }
      return undefined;
    });
  },
});
