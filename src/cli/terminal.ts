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
