import { chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { startEmbeddedPostgres, type EmbeddedExtras, type RunningPostgres } from '../../src/demo/embeddedPostgres.js';
import { startPostgres14 } from './postgres14.js';

export { freePort } from '../../src/demo/embeddedPostgres.js';
export type { RunningPostgres };

/**
 * A throwaway PostgreSQL for tests, in `dir/pg`: the demo's embedded server with what a test
 * suite needs on top (every test file clones its own database and holds several connections).
 */
export async function startTestPostgres(dir: string, extra: EmbeddedExtras = {}): Promise<RunningPostgres> {
  await chmod(dir, 0o755); // as root the server runs as the postgres user, which must enter it
  // TEST_POSTGRES=14: the oldest supported release instead of the newest (test/support/postgres14.ts)
  if (process.env.TEST_POSTGRES === '14') return startPostgres14(join(dir, 'pg'), extra);
  if (process.env.TEST_POSTGRES !== undefined && process.env.TEST_POSTGRES !== '18') {
    throw new Error(`TEST_POSTGRES=${process.env.TEST_POSTGRES}: the suite runs on 14 or 18`);
  }
  return startEmbeddedPostgres(join(dir, 'pg'), undefined, { ...extra, flags: ['-c', 'max_connections=200', ...(extra.flags ?? [])] });
}
