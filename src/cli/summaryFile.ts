import { closeSync, writeSync } from 'node:fs';
import { openAppendOnly } from '../atomicFile.js';
import { nowIso } from '../clock.js';

/**
 * `--summary-file`: the summary lines stdout got, appended with the time in front of each, so a
 * summary.log kept for months says when each night ran. Opened afresh by every run (append-only,
 * never through a link), so a log rotated by renaming it is simply started anew.
 */
export function appendSummary(path: string | undefined, text: string): void {
  if (!path) return;
  const at = nowIso();
  const fd = openAppendOnly(path, 'summary file');
  try {
    writeSync(
      fd,
      `${text
        .split('\n')
        .map((line) => `${at} ${line}`)
        .join('\n')}\n`,
    );
  } finally {
    closeSync(fd);
  }
}
