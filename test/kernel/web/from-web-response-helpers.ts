/** Shared bits for the fromWebResponse tests. */
import { AbstractBody } from '../../../kernel/index.js';

export { AbstractBody, ArgumentError, Response } from '../../../kernel/index.js';

/** Reads a streamed body to its end as text. */
export async function readAllBody(body: AbstractBody): Promise<string> {
  let out = '';
  for await (const c of body) out += Buffer.from(c).toString();
  return out;
}
