import { randomBytes } from 'node:crypto';
import { nowMs } from '../clock.js';

/** A dry run's id (`--dry-run`): it is never recorded in the ledger, and says so by its prefix. */
export const DRY_RUN_PREFIX = 'dry-';

/** `r-20260314-0200-7f3a`: the UTC minute the run started plus a random tag (`dry-…` for a dry run). */
export function newRunId(at = new Date(nowMs()), opts: { dryRun?: boolean } = {}): string {
  const iso = at.toISOString(); // 2026-03-14T02:00:00.000Z
  const day = iso.slice(0, 10).replaceAll('-', '');
  const minute = iso.slice(11, 16).replace(':', '');
  return `${opts.dryRun ? DRY_RUN_PREFIX : 'r-'}${day}-${minute}-${randomBytes(2).toString('hex')}`;
}
