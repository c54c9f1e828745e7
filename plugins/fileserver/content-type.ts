/**
 * Content type by file name, through `mime-types` (text types get `; charset=utf-8`).
 */
import { createRequire } from 'node:module';
import { extname } from 'node:path';

type MimeTypes = typeof import('mime-types');

let mime: MimeTypes | null = null;

/** `mime-types`, loaded on the first file served by name: its database is large, and many servers serve none. */
function mimeTypes(): MimeTypes {
  return (mime ??= createRequire(import.meta.url)('mime-types') as MimeTypes);
}

/** The content type for a file name's extension, or `null` when the name has none or it is unknown. */
export function contentTypeByName(name: string): string | null {
  // Only the extension: mime-types would read a bare name such as `html` as an extension.
  const ext = extname(name);
  if (ext === '' || ext === '.') return null;
  const t = mimeTypes().contentType(ext);
  return t === false ? null : t;
}
