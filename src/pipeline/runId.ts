import { randomBytes } from 'node:crypto';
import { nowMs } from '../clock.js';

/** `r-20260314-0200-7f3a`: the UTC minute the run started plus a random tag. */
export function newRunId(at = new Date(nowMs())): string {
  const iso = at.toISOString(); // 2026-03-14T02:00:00.000Z
  const day = iso.slice(0, 10).replaceAll('-', '');
  const minute = iso.slice(11, 16).replace(':', '');
  return `r-${day}-${minute}-${randomBytes(2).toString('hex')}`;
}
