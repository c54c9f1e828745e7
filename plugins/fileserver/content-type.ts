/**
 * Content type by file name, through `mime-types` (text types get `; charset=utf-8`).
 */
import { extname } from 'node:path';
import mime from 'mime-types';

/** The content type for a file name's extension, or `null` when the name has none or it is unknown. */
export function contentTypeByName(name: string): string | null {
  // Only the extension: mime-types would read a bare name such as `html` as an extension.
  const ext = extname(name);
  if (ext === '' || ext === '.') return null;
  const t = mime.contentType(ext);
  return t === false ? null : t;
}
