export { DatabaseRelay } from './databaseRelay.js';
export { until } from './until.js';
import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { afterEach } from 'vitest';
import { finished, type CliResult } from './cli.js';
import { sample } from './promtool.js';

/** A watch process: its output so far (`stdout()`), its end, and whether it is still running. */
export interface WatchProcess {
  child: ChildProcess;
  done: Promise<CliResult>;
  alive(): boolean;
  stdout(): string;
}

/**
 * The watch processes of a test file: `watching(child)` keeps each, and one a failed test left
 * running is ended after it.
 */
export function watchProcesses(): (child: ChildProcess) => WatchProcess {
  const started = new Set<ChildProcess>();
  afterEach(() => {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    started.clear();
  });
  return (child) => {
    started.add(child);
    let out = '';
    child.stdout?.on('data', (d) => (out += d));
    const done = finished(child);
    return { child, done, alive: () => child.exitCode === null && child.signalCode === null, stdout: () => out };
  };
}

/** One series of a metrics file as it is now; undefined while the file or the series is not there. */
export async function metric(path: string, series: string): Promise<number | undefined> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.includes(`${series} `) ? sample(text, series) : undefined;
}
