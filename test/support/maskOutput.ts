import { hostname } from 'node:os';

/**
 * Masks what changes from one run of the suite to the next (run ids, times, durations, hashes,
 * paths, host, pid, ISO week) so that the CLI's human output can be compared with stored
 * snapshots. Run ids are numbered in the order they first appear (`<run-1>`, `<run-2>`), so a
 * snapshot still says which run is which. Column padding depends on the masked values' widths:
 * runs of spaces are cut to two, which keeps the columns apart.
 */
export class OutputMask {
  private readonly runs = new Map<string, string>();

  constructor(private readonly paths: Record<string, string>) {}

  mask(text: string): string {
    let t = text;
    // longest first, so that a path inside another is not half-masked
    for (const [label, path] of Object.entries(this.paths).sort((a, b) => b[1].length - a[1].length)) t = t.replaceAll(path, `<${label}>`);
    t = t.replace(/\br-\d{8}-\d{4}-[0-9a-f]{4}\b/g, (id) => {
      if (!this.runs.has(id)) this.runs.set(id, `<run-${this.runs.size + 1}>`);
      return this.runs.get(id)!;
    });
    return t
      .replace(/\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?Z?/g, '<time>')
      .replace(/\b\d{4}-W\d{2}\b/g, '<week>')
      .replace(/\b\d+(?:\.\d+)?(?:ms|s|m|h)\b/g, '<duration>')
      .replace(/\b[0-9a-f]{64}\b/g, '<sha256>')
      .replace(/\b[0-9a-f]{12}…/g, '<sha256>…')
      .replace(new RegExp(`\\b${hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'g'), '<host>')
      .replace(/\bpid \d+/g, 'pid <pid>')
      .replace(/ {2,}/g, '  ')
      .replace(/ +$/gm, '');
  }
}
