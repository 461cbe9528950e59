import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { sampleSettlement } from '../src/demo/sampleSettlement.js';
import { BIN, runCli } from '../test/support/cli.js';
import { startTestPostgres, type RunningPostgres } from '../test/support/postgresServer.js';
import type { Workspace } from '../test/support/workspace.js';

/** A figure of the table: ours, the reference's, how they compare, the goal, and how busy the machine was. */
export interface Figure {
  figure: string;
  ours: string;
  reference: string;
  ref: string;
  /** how we compare, in the goal's own terms */
  ratio: string;
  goal: string;
  /** undefined: a figure without a goal */
  holds?: boolean;
  /** the 1-minute load average when it was measured: on a shared machine, the figure's context */
  load: number;
  measured: number[];
}

export const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
export const load = () => loadavg()[0]!;

export function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

/** A figure without a reference (memory, per file, idle), judged against its bound. */
export function bounded(figure: string, value: number, shown: string, goal: string, holds: boolean, reference = '—'): Figure {
  return { figure, ours: shown, reference, ref: '—', ratio: '—', goal, holds, load: load(), measured: [value] };
}

/**
 * The reference and ours take turns (reference, ours, reference, ours, …), so that a busy minute
 * on a shared machine weighs on both; the ratio is the median of each turn's own ratio.
 */
export async function inTurns(
  turns: number,
  reference: () => Promise<unknown> | unknown,
  ours: () => Promise<unknown> | unknown,
  before: { reference?: () => Promise<unknown>; ours?: () => Promise<unknown> } = {},
): Promise<{ refMs: number; oursMs: number; ratio: number; load: number }> {
  const refs: number[] = [];
  const oursMs: number[] = [];
  const loads: number[] = [];
  for (let i = 0; i < turns; i++) {
    await before.reference?.();
    refs.push(await timed(reference));
    await before.ours?.();
    oursMs.push(await timed(ours));
    loads.push(load());
  }
  return { refMs: median(refs), oursMs: median(oursMs), ratio: median(refs.map((r, i) => r / oursMs[i]!)), load: median(loads) };
}

export async function timed(fn: () => Promise<unknown> | unknown): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** A figure against its reference: our speed (or throughput) as a share of the reference's. */
export function versus(
  figure: string,
  turns: { refMs: number; oursMs: number; ratio: number; load: number },
  reference: string,
  terms: 'speed' | 'throughput',
  goal: number | undefined,
): Figure {
  return {
    figure,
    ours: s(turns.oursMs),
    reference,
    ref: s(turns.refMs),
    ratio: `${turns.ratio.toFixed(2)}× its ${terms}`,
    goal: goal === undefined ? '—' : `≥ ${goal}×`,
    ...(goal === undefined ? {} : { holds: turns.ratio >= goal }),
    load: turns.load,
    measured: [turns.oursMs, turns.refMs],
  };
}

export const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

/**
 * One `settle-ingest run` as cron starts it, under GNU time: wall time, peak RSS, the summary,
 * and the COPY format its log says the load used. `expect`: the exit status it must end with.
 */
export async function measuredRun(
  ws: Workspace,
  expect: number = 0,
): Promise<{ ms: number; rssMiB: number; stdout: string; copyFormat: string | undefined }> {
  const rssFile = join(ws.root, 'maxrss');
  const env: Record<string, string> = { DATABASE_URL: ws.databaseUrl };
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[k]) env[k] = process.env[k]!;
  const t0 = process.hrtime.bigint();
  // the executable itself, through its #! line (and the V8 flags there), as cron and systemd start it
  const child = spawn('/usr/bin/time', ['-f', '%M', '-o', rssFile, BIN, ...ws.runArgs()], {
    env,
    cwd: ws.root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (status !== expect) throw new Error(`settle-ingest run exited ${status}, not ${expect}: ${stdout}${stderr.slice(-2000)}`);
  const loaded = stderr
    .split('\n')
    .filter((l) => l.includes('"event":"loaded"'))
    .map((l) => JSON.parse(l) as { copy_format?: string })[0];
  return { ms, rssMiB: Number((await readFile(rssFile, 'utf8')).trim()) / 1024, stdout, copyFormat: loaded?.copy_format };
}

/** A settlement file of `rows` rows written in blocks, so that a file of any size costs this process little memory. */
export async function writeSettlement(path: string, rows: number): Promise<number> {
  const out = createWriteStream(path);
  const block = 200_000;
  for (let done = 0, n = 0; done < rows; done += block, n++) {
    const text = sampleSettlement({ date: '2026-09-01', rows: Math.min(block, rows - done), idPrefix: `B${n}` }).text;
    if (!out.write(n === 0 ? text : text.slice(text.indexOf('\n') + 1))) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((r) => out.end(() => r()));
  await flushed(path);
  return (await stat(path)).size;
}

/** On disk before anything is measured: the kernel writing it back meanwhile would weigh on whatever runs then. */
async function flushed(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * A file of `bytes` bytes whose header names none of the default layout's columns: a run stages
 * and hashes all of it, then rejects it at its first line (one staged copy, one hash, a reject).
 */
export async function writeHeaderless(path: string, bytes: number): Promise<void> {
  const out = createWriteStream(path);
  const line = `${'x'.repeat(100)},1,2\n`;
  const block = Buffer.from(line.repeat(Math.floor((4 * 1024 * 1024) / line.length)));
  let written = 0;
  const write = (b: Buffer) => (out.write(b) ? undefined : new Promise<void>((r) => out.once('drain', () => r())));
  await write(Buffer.from('a,b,c\n'));
  written += 6;
  while (written + block.length <= bytes) {
    await write(block);
    written += block.length;
  }
  if (bytes > written) await write(Buffer.from(`${'y'.repeat(Math.max(0, bytes - written - 1))}\n`));
  await new Promise<void>((r) => out.end(() => r()));
  await flushed(path);
}

/** A PostgreSQL for the bench, as fast as it can be made or as shipped, with a migrated database. */
export interface BenchServer {
  name: 'fast' | 'shipped';
  /** in words, for the table */
  described: string;
  url: string;
  client: pg.Client;
  stop(): Promise<void>;
}

const SERVERS = {
  // durability off: what is left is the cost of the rows themselves, where the client's own cost shows most
  fast: { described: 'fsync=off', flags: ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] },
  // PostgreSQL's own defaults (the embedded server's fsync=off undone)
  shipped: { described: 'as shipped', flags: ['-c', 'fsync=on', '-c', 'synchronous_commit=on', '-c', 'full_page_writes=on'] },
} as const;

export async function startBenchServer(name: 'fast' | 'shipped'): Promise<BenchServer> {
  const dir = await mkdtemp(join(tmpdir(), `settle-bench-pg-${name}-`));
  let server: RunningPostgres | undefined;
  try {
    server = await startTestPostgres(dir, { flags: [...SERVERS[name].flags] });
    await server.createDatabase('bench');
    const url = server.url('bench');
    const ledgerDir = await mkdtemp(join(tmpdir(), 'settle-bench-ledger-'));
    const migrated = await runCli(['migrate', '--ledger', join(ledgerDir, 'l.sqlite')], { DATABASE_URL: url });
    await rm(ledgerDir, { recursive: true, force: true });
    if (migrated.status !== 0) throw new Error(`migrating the ${name} server failed: ${migrated.stderr}`);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const running = server;
    return {
      name,
      described: SERVERS[name].described,
      url,
      client,
      async stop() {
        await client.end().catch(() => undefined);
        await running.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await server?.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** The table as Markdown, with the day and what was measured. */
export async function writeTable(title: string, figures: Figure[]): Promise<string> {
  const lines = [
    title,
    '',
    '| figure | settle-ingest | reference | reference figure | ratio | goal | holds | load avg |',
    '| --- | ---: | --- | ---: | ---: | ---: | --- | ---: |',
    ...figures.map(
      (f) =>
        `| ${f.figure} | ${f.ours} | ${f.reference} | ${f.ref} | ${f.ratio} | ${f.goal} | ${f.holds === undefined ? '—' : f.holds ? 'yes' : 'NO'} | ${f.load.toFixed(1)} |`,
    ),
  ];
  const text = `${lines.join('\n')}\n`;
  await writeFile('.test-output/bench.md', text);
  return text;
}
