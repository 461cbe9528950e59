import type { GateWaiting } from '../pipeline/completenessGate.js';
import type { LoadProgress } from '../pipeline/runContext.js';
import { printable } from '../report/printable.js';

/**
 * A one-line progress display on a terminal's stderr. Log lines share stderr, so the
 * status line is wiped before each one and redrawn by the next update.
 */
export class TerminalStatus {
  private shown = false;
  private lastDraw = 0;

  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {}

  get enabled(): boolean {
    return this.stream.isTTY === true;
  }

  show(text: string, force = false): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (!force && now - this.lastDraw < 200) return;
    this.lastDraw = now;
    this.stream.write(`\r\x1b[K${printable(text)}`);
    this.shown = true;
  }

  clear(): void {
    if (!this.shown) return;
    this.stream.write('\r\x1b[K');
    this.shown = false;
  }
}

/**
 * The first Ctrl-C on a terminal is answered at once: the run may take a while to finish the file
 * in hand, and a person who sees nothing presses again (which ends it at once). Written over any
 * progress line, and not at all when stderr is a file or a pipe (cron, systemd), where nobody waits.
 */
export function acknowledgeStop(stream: NodeJS.WriteStream = process.stderr): void {
  if (stream.isTTY !== true) return;
  stream.write('\r\x1b[Kstopping: finishing the file in hand, then no other (Ctrl-C again to stop at once)\n');
}

const MB = 1_000_000;
const mb = (bytes: number) => (bytes / MB).toFixed(bytes < 10 * MB ? 1 : 0);

/** `settle_x.csv: 45% · 1,234,567 rows · 56 of 125 MB · 18.3 MB/s`: a load's progress as a person reads it. */
export function progressLine(loadProgress: LoadProgress, now = Date.now()): string {
  const share = loadProgress.totalBytes > 0 ? `${Math.min(100, Math.floor((loadProgress.bytes / loadProgress.totalBytes) * 100))}%` : '';
  const seconds = (now - loadProgress.startedAt) / 1000;
  const rate = seconds >= 0.5 ? ` · ${(loadProgress.bytes / MB / seconds).toFixed(1)} MB/s` : '';
  return `${loadProgress.file}: ${share ? `${share} · ` : ''}${loadProgress.rows.toLocaleString('en-US')} rows · ${mb(loadProgress.bytes)} of ${mb(loadProgress.totalBytes)} MB${rate}`;
}

/** `settle_x.csv: 45% read · 56 of 125 MB`: a download's progress (a file read from an SFTP server). */
export function downloadLine(file: string, bytes: number, size: number): string {
  const share = size > 0 ? `${Math.min(100, Math.floor((bytes / size) * 100))}% read · ` : '';
  return `${file}: ${share}${mb(bytes)} of ${mb(size)} MB`;
}

/** `waiting for settle_x.csv (and 2 more) to stay unchanged for 30s (--stable-for): 12s to go`. */
export function waitingLine(gateWaiting: GateWaiting, stableForSeconds: number): string {
  const more = gateWaiting.files.length > 1 ? ` (and ${gateWaiting.files.length - 1} more)` : '';
  return `waiting for ${gateWaiting.files[0] ?? 'files'}${more} to stay unchanged for ${stableForSeconds}s (--stable-for): ${Math.ceil(gateWaiting.remainingMs / 1000)}s to go`;
}
