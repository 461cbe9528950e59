import type pg from 'pg';
import { UsageError } from '../errors.js';
import { libpqTargetSet } from '../db/pgConnect.js';
import { connectWatched } from '../db/statementWatch.js';

export interface FinanceConnectOptions {
  /** --db-timeout: connecting, and each lock or statement wait */
  timeoutSeconds: number;
  /** an idle connection that breaks */
  onLost: (err: Error) => void;
  /** a stop request: a statement stuck waiting is then cancelled at once */
  stop?: AbortSignal;
}

/**
 * Connects to the finance database once per run. An unreachable server is transient
 * (exit 1, try again next run); a refused login or missing database is configuration (exit 2).
 * No wait on it is unbounded: connecting, lock waits and statements end after --db-timeout,
 * and a watch covers what the server cannot enforce itself (see statementWatch.ts).
 */
export async function connectFinance(url: string | undefined, opts: FinanceConnectOptions): Promise<pg.Client> {
  if (!url && !libpqTargetSet()) {
    throw new UsageError('no finance database: set --database-url, DATABASE_URL, or the PGHOST/PGDATABASE/PGUSER variables');
  }
  return connectWatched(url, {
    what: 'finance database',
    applicationName: 'settle-ingest',
    option: '--db-timeout',
    timeoutMs: Math.max(1, Math.round(opts.timeoutSeconds * 1000)),
    onError: opts.onLost,
    stop: opts.stop,
  });
}
