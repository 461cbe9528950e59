import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The alert rules as shipped in ops/. */
export const RULES = fileURLToPath(new URL('../../ops/settle-ingest.rules.yml', import.meta.url));

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

/**
 * The alert rules of ops/ as `promtool test rules` takes them, written to `dir/rules.yml`: the
 * annotations (for people) left out, since promtool would compare them too; every rule and
 * expression unchanged.
 */
export async function rulesUnderTest(dir: string): Promise<string> {
  const lines = (await readFile(RULES, 'utf8')).split('\n');
  const kept: string[] = [];
  let skipUnder = -1;
  for (const line of lines) {
    const indent = line.search(/\S/);
    if (skipUnder >= 0 && (indent === -1 || indent > skipUnder)) continue;
    skipUnder = line.trim() === 'annotations:' ? indent : -1;
    if (skipUnder < 0) kept.push(line);
  }
  const path = join(dir, 'rules.yml');
  await writeFile(path, kept.join('\n'));
  return path;
}

/** One `alert_rule_test` of a promtool test file: at `at`, the alert fires once per label set given (none: it is quiet). */
export function alertAt(at: string, alert: string, firing: string[][]): string {
  const head = `      - eval_time: ${at}\n        alertname: ${alert}\n        exp_alerts:`;
  if (firing.length === 0) return `${head} []`;
  return [head, ...firing.map((labels) => `          - exp_labels: { ${labels.join(', ')} }`)].join('\n');
}
