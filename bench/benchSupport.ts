import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { sampleSettlement } from '../src/demo/sampleSettlement.js';
import { BIN, runCli } from '../test/support/cli.js';
import { startPostgresFrom } from '../test/support/postgres14.js';
import { startTestPostgres, type RunningPostgres } from '../test/support/postgresServer.js';
import { statementLayoutObject } from '../test/support/statementLayout.js';
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
  /** a figure against a reference: each turn's (reference ms, ours ms), printed under the table */
  turns?: [number, number][];
}

export const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
export const load = () => loadavg()[0]!;

/** The middle value; of an even count, the mean of the two middle ones (never the better of them). */
export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
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
): Promise<Turns> {
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
  const ratios = refs.map((r, i) => r / oursMs[i]!);
  return {
    refMs: median(refs),
    oursMs: median(oursMs),
    ratio: median(ratios),
    load: median(loads),
    each: refs.map((r, i) => [r, oursMs[i]!]),
  };
}

/** What a figure's turns gave: the medians, and each turn's pair (reference ms, ours ms) in order. */
export interface Turns {
  refMs: number;
  oursMs: number;
  ratio: number;
  load: number;
  each: [number, number][];
}

/**
 * The kernel's write-back of what the last figure left in the page cache (a load's gigabytes on a
 * server with fsync off) finished before the next is measured: otherwise every fsync of the next
 * (the ledger's, a folder's) waits behind it, and a figure measures its predecessor's disk.
 */
export function quietDisk(): void {
  execFileSync('sync');
}

export async function timed(fn: () => Promise<unknown> | unknown): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** A figure against its reference: our speed (or throughput) as a share of the reference's. */
export function versus(figure: string, turns: Turns, reference: string, terms: 'speed' | 'throughput', goal: number | undefined): Figure {
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
    turns: turns.each,
  };
}

export const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

/**
 * One `settle-ingest run` as cron starts it, under GNU time: wall time from exec to exit, peak
 * RSS, the summary, the COPY format its log says the load used, and where the wall time went
 * (the test package's fault points in `trace` mode, src/faults.ts: a line per step, summed by
 * phase over the files). `expect`: the exit status it must end with.
 */
export async function measuredRun(
  ws: Workspace,
  expect: number = 0,
  /** more arguments of the run (`--config FILE`) */
  extra: string[] = [],
): Promise<{ ms: number; rssMiB: number; stdout: string; copyFormat: string | undefined; phases: Phases }> {
  const rssFile = join(ws.root, 'maxrss');
  const traceFile = join(ws.root, 'trace');
  await writeFile(traceFile, '');
  const env: Record<string, string> = { DATABASE_URL: ws.databaseUrl, SETTLE_TEST_FAULT: 'trace', SETTLE_TEST_TRACE: traceFile };
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[k]) env[k] = process.env[k]!;
  const startedAt = performance.timeOrigin + performance.now();
  const t0 = process.hrtime.bigint();
  // the executable itself, through its #! line (and the V8 flags there), as cron and systemd start it
  const child = spawn('/usr/bin/time', ['-f', '%M', '-o', rssFile, BIN, ...ws.runArgs(extra)], {
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
  const endedAt = startedAt + ms;
  if (status !== expect) throw new Error(`settle-ingest run exited ${status}, not ${expect}: ${stdout}${stderr.slice(-2000)}`);
  const loaded = stderr
    .split('\n')
    .filter((l) => l.includes('"event":"loaded"'))
    .map((l) => JSON.parse(l) as { copy_format?: string })[0];
  const phases = phasesOf(await readFile(traceFile, 'utf8'), startedAt, endedAt);
  return { ms, rssMiB: Number((await readFile(rssFile, 'utf8')).trim()) / 1024, stdout, copyFormat: loaded?.copy_format, phases };
}

/** A run's wall time by phase, in ms, summed over its files; together they make the whole. */
export type Phases = Record<Phase, number>;
export const PHASES = ['start', 'listing', 'staging + hash', 'checks', 'claim', 'load', 'finalize', 'move', 'end'] as const;
type Phase = (typeof PHASES)[number];

/** Which phase the time after each step belongs to (DESIGN.md's flow: list, stage, claim, load, finalize, move). */
const PHASE_AFTER: Record<string, Phase> = {
  'before-list': 'listing',
  'before-open': 'staging + hash',
  'after-download': 'checks',
  'before-claim': 'claim',
  'after-claim': 'load',
  'mid-copy': 'load',
  'after-commit': 'finalize',
  'before-finalize': 'finalize',
  'after-finalize': 'move',
  'before-move': 'move',
  'mid-move': 'move',
  'after-move': 'move',
  'after-move-record': 'end',
};

/**
 * The trace's steps as phases: exec to the first step is the start (Node.js, modules, the ledger,
 * the database, the run's own start), the last step to exit the end (the run's finish, closing).
 * Time after a file's move and before the next file's open counts as listing (the next entry).
 */
export function phasesOf(trace: string, startedAt: number, endedAt: number): Phases {
  const phases = Object.fromEntries(PHASES.map((p) => [p, 0])) as Phases;
  let phase: Phase = 'start';
  let since = startedAt;
  for (const line of trace.split('\n').filter(Boolean)) {
    const [step, at] = line.split(' ');
    phases[phase] += Number(at) - since;
    since = Number(at);
    phase = phase === 'end' && step !== 'before-list' ? 'listing' : (PHASE_AFTER[step!] ?? phase);
    if (step === 'after-move-record') phase = 'end';
  }
  phases[phase] += endedAt - since;
  return phases;
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

/**
 * A bank statement without ids (docs/LAYOUTS.md "Statements without ids"): a date, a text, an
 * amount and a running balance, forty lines a day; every twentieth line repeats the line before
 * it (two identical coffees: occurrence 2). The same rows each time (a fixed seed).
 */
export async function writeStatement(path: string, rows: number): Promise<number> {
  const out = createWriteStream(path);
  const texts = ['CARD 4411 CAFE LUMEN', 'METRO TICKET', 'SEPA TRANSFER RENT', 'GROCERY MARKT 12', 'ATM WITHDRAWAL', 'BAKERY SONNE'];
  let seed = 46;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  let balance = 100_000;
  let before = { text: '', amount: '' };
  let block = 'Date,Text,Amount,Balance\n';
  for (let i = 0; i < rows; i++) {
    const day = new Date(Date.UTC(2020, 0, 1) + Math.floor(i / 40) * 86_400_000);
    const date = `${String(day.getUTCDate()).padStart(2, '0')}.${String(day.getUTCMonth() + 1).padStart(2, '0')}.${day.getUTCFullYear()}`;
    const line =
      i % 20 === 1
        ? before
        : {
            text: `${texts[Math.floor(random() * texts.length)]!} ${Math.floor(random() * 1000)}`,
            amount: (-(1 + Math.floor(random() * 20_000)) / 100).toFixed(2),
          };
    before = line;
    balance += Number(line.amount);
    block += `${date},${line.text},${line.amount},${balance.toFixed(2)}\n`;
    if (block.length > 1 << 20 || i === rows - 1) {
      if (!out.write(block)) await new Promise<void>((r) => out.once('drain', () => r()));
      block = '';
    }
  }
  await new Promise<void>((r) => out.end(() => r()));
  await flushed(path);
  return (await stat(path)).size;
}

/** The statement's layout: its rows keyed on their own values, numbered by occurrence, compared when seen before. */
export const STATEMENT_LAYOUT = statementLayoutObject({ table: 'bench_statement_lines', occurrence: true });

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

/** Debian's PostgreSQL 15 (apt-get install postgresql-15), where the machine has it: the bench's fast server. */
const SYSTEM_POSTGRES = '/usr/lib/postgresql/15/bin';

const DURABILITY_OFF = ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'];
const SERVERS = {
  // as fast as this machine allows: a release built by a current compiler without data checksums
  // (the embedded 18.4 beta is built by gcc 7.5 with checksums on, docs/BENCHMARKS.md), durability
  // off, room for the table and its indexes in shared buffers and no checkpoint during a load;
  // what is left is the cost of the rows themselves, where the client's own cost shows most
  fast: {
    described: 'fast (PostgreSQL 15, fsync=off)',
    flags: [...DURABILITY_OFF, '-c', 'shared_buffers=1GB', '-c', 'max_wal_size=8GB', '-c', 'checkpoint_timeout=1h', '-c', 'autovacuum=off'],
    system: true,
  },
  // PostgreSQL's own defaults, on the embedded server the demo and the tests use (its fsync=off undone)
  shipped: {
    described: 'as shipped (PostgreSQL 18)',
    flags: ['-c', 'fsync=on', '-c', 'synchronous_commit=on', '-c', 'full_page_writes=on'],
    system: false,
  },
} as const;

export async function startBenchServer(name: 'fast' | 'shipped'): Promise<BenchServer> {
  const dir = await mkdtemp(join(tmpdir(), `settle-bench-pg-${name}-`));
  await chmod(dir, 0o755); // as root the server runs as the postgres user, which must enter it
  let server: RunningPostgres | undefined;
  try {
    const system = SERVERS[name].system && existsSync(join(SYSTEM_POSTGRES, 'initdb'));
    const flags = [...SERVERS[name].flags];
    server = system
      ? await startPostgresFrom({ initdb: join(SYSTEM_POSTGRES, 'initdb'), pgCtl: join(SYSTEM_POSTGRES, 'pg_ctl') }, join(dir, 'pg'), {
          flags,
        })
      : await startTestPostgres(dir, { flags });
    await server.createDatabase('bench');
    const url = server.url('bench');
    const ledgerDir = await mkdtemp(join(tmpdir(), 'settle-bench-ledger-'));
    const migrated = await runCli(['migrate', '--ledger', join(ledgerDir, 'l.sqlite')], { DATABASE_URL: url });
    await rm(ledgerDir, { recursive: true, force: true });
    if (migrated.status !== 0) throw new Error(`migrating the ${name} server failed: ${migrated.stderr}`);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const running = server;
    const version = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version.split(' ')[0];
    return {
      name,
      described:
        system || name === 'shipped' ? SERVERS[name].described : `fast (PostgreSQL ${version}, fsync=off; no system PostgreSQL 15)`,
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
export async function writeTable(title: string, figures: Figure[], after: string[] = []): Promise<string> {
  const lines = [
    title,
    '',
    '| figure | settle-ingest | reference | reference figure | ratio | goal | holds | load avg |',
    '| --- | ---: | --- | ---: | ---: | ---: | --- | ---: |',
    ...figures.map(
      (f) =>
        `| ${f.figure} | ${f.ours} | ${f.reference} | ${f.ref} | ${f.ratio} | ${f.goal} | ${f.holds === undefined ? '—' : f.holds ? 'yes' : 'NO'} | ${f.load.toFixed(1)} |`,
    ),
    ...after,
  ];
  const text = `${lines.join('\n')}\n`;
  await writeFile('.test-output/bench.md', text);
  return text;
}
