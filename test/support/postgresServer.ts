import { chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { startEmbeddedPostgres, type EmbeddedExtras, type RunningPostgres } from '../../src/demo/embeddedPostgres.js';

export { freePort } from '../../src/demo/embeddedPostgres.js';
export type { RunningPostgres };

/**
 * A throwaway PostgreSQL for tests, in `dir/pg`: the demo's embedded server with what a test
 * suite needs on top (every test file clones its own database and holds several connections).
 */
export async function startTestPostgres(dir: string, extra: EmbeddedExtras = {}): Promise<RunningPostgres> {
  await chmod(dir, 0o755); // as root the server runs as the postgres user, which must enter it
  return startEmbeddedPostgres(join(dir, 'pg'), undefined, { ...extra, flags: ['-c', 'max_connections=200', ...(extra.flags ?? [])] });
}
