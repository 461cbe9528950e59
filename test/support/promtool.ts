import { spawnSync } from 'node:child_process';

/**
 * Runs Prometheus's own checker. Missing promtool is a failure, never a skip: the metrics
 * file and the alert rules would go unchecked (`.ci/run` installs Debian's prometheus package).
 */
export function promtool(args: string[], input?: string): { status: number | null; output: string } {
  const r = spawnSync('promtool', args, { encoding: 'utf8', input });
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    throw new Error('promtool is not installed: install the Debian package prometheus (.ci/run does)');
  }
  if (r.error) throw r.error;
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** One sample's value from a Prometheus text file: `name{labels} value`. */
export function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  if (!line) throw new Error(`no sample ${series} in:\n${text}`);
  return Number(line.slice(series.length + 1));
}
