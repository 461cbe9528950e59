import { execFileSync } from 'node:child_process';
import { copyFile, link, mkdir, mkdtemp, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sampleSettlement } from '../src/demo/sampleSettlement.js';
import { HostKeyPolicy } from '../src/intake/sftp/hostKeys.js';
import { LocalIntake } from '../src/intake/local/intake.js';
import { SftpIntake } from '../src/intake/sftp/intake.js';
import { stageAndHash } from '../src/pipeline/stageAndHash.js';
import { assertFreshBuild } from '../test/support/freshBuild.js';
import { TestSshd } from '../test/support/sshd.js';
import { Workspace } from '../test/support/workspace.js';
import {
  bounded,
  has,
  PHASES,
  inTurns,
  load,
  measuredRun,
  median,
  quietDisk,
  s,
  timed,
  startBenchServer,
  versus,
  STATEMENT_LAYOUT,
  writeHeaderless,
  writeSettlement,
  writeStatement,
  writeTable,
  type BenchServer,
  type Figure,
  type Phases,
} from './benchSupport.js';

/** the load's files, one or more sizes (`1000000,10000000`: the 10,000,000-row figure too; it takes minutes a turn) */
const LOAD_ROWS = (process.env.BENCH_ROWS ?? '1000000').split(',').map(Number);
const ROWS = LOAD_ROWS[0]!;
/** turns for a load of more than 1,000,000 rows (default: BENCH_TURNS) */
const BIG_LOAD_TURNS = Number(process.env.BENCH_BIG_LOAD_TURNS ?? process.env.BENCH_TURNS ?? 5);
/** a second, much larger file whose peak memory is measured too (0: skipped) */
const BIG_ROWS = Number(process.env.BENCH_BIG_ROWS ?? 0);
const SMALL_FILES = Number(process.env.BENCH_SMALL_FILES ?? 10_000);
/** the file staged and hashed through the CLI against tee into openssl */
const STAGING_BYTES = Number(process.env.BENCH_STAGING_BYTES ?? 1024 ** 3);
/** the servers the load figures are measured on: `fast` (fsync=off), `shipped` (PostgreSQL's defaults) */
const SERVERS = (process.env.BENCH_SERVERS ?? 'fast,shipped').split(',') as ('fast' | 'shipped')[];
const TURNS = Number(process.env.BENCH_TURNS ?? 5);
/** the staged load's statement (rows numbered by occurrence, compared when seen before); 0: skipped */
const STATEMENT_ROWS = Number(process.env.BENCH_STATEMENT_ROWS ?? 200_000);

/** no keys: gzip and zip need none */
const DECODE = {
  decryptionKey: undefined,
  verificationKey: undefined,
  maxInflateRatio: 1000,
  maxDecodedBytes: 16 * 1024 ** 3,
  memberPattern: undefined,
};

/** the server being measured: one at a time (see the test) */
const servers: BenchServer[] = [];
/** where each load figure's median turn spent its wall time, printed below the table */
const breakdowns: { figure: string; ms: number; refMs: number; phases: Phases }[] = [];
let dir = '';
beforeAll(async () => {
  assertFreshBuild();
  for (const tool of ['openssl', 'psql', 'tee', '/usr/bin/time']) expect(has(tool), `${tool} is needed for a reference`).toBe(true);
  dir = await mkdtemp(join(tmpdir(), 'settle-bench-'));
}, 300_000);
afterAll(async () => {
  for (const server of servers) await server.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const truncate = (server: BenchServer) => server.client.query('TRUNCATE settle.settlement_rows, settle.loads, settle.file_loads');

/** A workspace (intake, folders, migrated ledger) on a server, with one file linked into its intake. */
async function workspaceWith(server: BenchServer, file: string, name: string): Promise<Workspace> {
  const ws = await Workspace.create(server.url);
  await link(file, join(ws.intake, name)).catch(() => copyFile(file, join(ws.intake, name)));
  return ws;
}

/**
 * The load: a whole `settle-ingest run` of the file against `psql \copy` of the same file into a
 * table of the same columns and indexes (LIKE never copies a foreign key; the provenance columns
 * the file has no values for may stay empty), taking turns.
 */
async function loadFigures(server: BenchServer, file: string, name: string, size: number, rows: number): Promise<Figure[]> {
  // the first line only: a 10,000,000-row file is longer than a string may be
  const fh = await open(file, 'r');
  const head = await fh.read(Buffer.alloc(4096), 0, 4096, 0).finally(() => fh.close());
  const header = head.buffer.subarray(0, head.bytesRead).toString('utf8').split('\n')[0]!.split(',');
  const { client } = server;
  await client.query('DROP TABLE IF EXISTS public.bench_ref');
  await client.query('CREATE TABLE public.bench_ref (LIKE settle.settlement_rows INCLUDING DEFAULTS INCLUDING INDEXES)');
  const notNull = await client.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'bench_ref' AND is_nullable = 'NO'`,
  );
  for (const { column_name } of notNull.rows.filter((c) => !header.includes(c.column_name))) {
    await client.query(`ALTER TABLE public.bench_ref ALTER COLUMN ${column_name} DROP NOT NULL`);
  }
  const runs: { ms: number; rssMiB: number; copyFormat: string | undefined; phases: Phases }[] = [];
  let ws: Workspace | undefined;
  const turns = await inTurns(
    rows > 1_000_000 ? BIG_LOAD_TURNS : TURNS,
    () =>
      execFileSync('psql', [
        server.url,
        '-q',
        '-c',
        `\\copy public.bench_ref (${header.join(', ')}) FROM '${file}' WITH (FORMAT csv, HEADER)`,
      ]),
    async () => runs.push(await measuredRun(ws!)),
    {
      reference: async () => {
        await client.query('TRUNCATE public.bench_ref');
        quietDisk();
      },
      ours: async () => {
        if (ws) await rm(ws.root, { recursive: true, force: true });
        await truncate(server);
        ws = await workspaceWith(server, file, name);
        quietDisk();
      },
    },
  );
  if (ws) await rm(ws.root, { recursive: true, force: true });
  const loaded = await client.query<{ n: string }>('SELECT count(*) AS n FROM settle.settlement_rows');
  expect(Number(loaded.rows[0]!.n)).toBe(rows);
  await client.query('DROP TABLE public.bench_ref');
  const rss = median(runs.map((r) => r.rssMiB));
  const format = runs[0]!.copyFormat ?? 'text';
  const figure = `the whole run, ${rows.toLocaleString('en-US')} rows (COPY ${format}), ${server.described}`;
  const medianRun = [...runs].sort((a, b) => a.ms - b.ms)[Math.floor(runs.length / 2)]!;
  breakdowns.push({ figure, ms: medianRun.ms, refMs: turns.refMs, phases: medianRun.phases });
  return [
    // 1,000,000 rows: at least 0.9× \copy; more: faster than it (DESIGN.md's speed, docs/BENCHMARKS.md)
    versus(figure, turns, 'psql \\copy, same columns and indexes, no FK', 'throughput', rows > 1_000_000 ? 1 : 0.9),
    bounded(`peak RSS of that run (${mib(size)} file), ${server.described}`, rss, `${rss.toFixed(0)} MiB`, '< 150 MiB', rss < 150),
  ];
}

/**
 * The staged load (src/finance/stagedLoad.ts): a whole `settle-ingest run` of a statement without
 * ids, its rows staged in a temporary table, numbered by occurrence and inserted where no loaded
 * row has their key, against `psql \copy` of the same file into a table of the same columns and
 * indexes (its occurrence left empty: the UNIQUE index is kept up all the same, and no row clashes).
 */
async function stagedFigure(server: BenchServer, file: string, rows: number): Promise<Figure> {
  const { client } = server;
  const name = 'statement_2020.csv';
  const setUp = async () => {
    const ws = await Workspace.forLayout(server.url, STATEMENT_LAYOUT, 'statement_*.csv');
    await link(file, join(ws.ws.intake, name)).catch(() => copyFile(file, join(ws.ws.intake, name)));
    return ws;
  };
  let statement = await setUp();
  await client.query('DROP TABLE IF EXISTS public.bench_statement_ref');
  await client.query('CREATE TABLE public.bench_statement_ref (LIKE settle.bench_statement_lines INCLUDING DEFAULTS INCLUDING INDEXES)');
  for (const column of ['occurrence', 'load_id', 'source_line']) {
    await client.query(`ALTER TABLE public.bench_statement_ref ALTER COLUMN ${column} DROP NOT NULL`);
  }
  const runs: { ms: number; phases: Phases }[] = [];
  const turns = await inTurns(
    TURNS,
    () =>
      execFileSync(
        'psql',
        [
          server.url,
          '-q',
          '-c',
          `\\copy public.bench_statement_ref (booking_date, text, amount, balance) FROM '${file}' WITH (FORMAT csv, HEADER)`,
        ],
        { env: { ...process.env, PGDATESTYLE: 'ISO, DMY' } },
      ),
    async () => runs.push(await measuredRun(statement.ws, 0, ['--config', statement.config])),
    {
      reference: async () => {
        await client.query('TRUNCATE public.bench_statement_ref');
        quietDisk();
      },
      ours: async () => {
        await rm(statement.ws.root, { recursive: true, force: true });
        await client.query('TRUNCATE settle.bench_statement_lines, settle.loads, settle.file_loads');
        statement = await setUp();
        quietDisk();
      },
    },
  );
  const loaded = await client.query<{ n: string; repeats: string }>(
    'SELECT count(*) AS n, count(*) FILTER (WHERE occurrence > 1) AS repeats FROM settle.bench_statement_lines',
  );
  expect(Number(loaded.rows[0]!.n)).toBe(rows);
  expect(Number(loaded.rows[0]!.repeats)).toBeGreaterThan(0);
  await rm(statement.ws.root, { recursive: true, force: true });
  await client.query('DROP TABLE public.bench_statement_ref');
  await client.query('TRUNCATE settle.bench_statement_lines, settle.loads, settle.file_loads');
  const figure = `the whole run of a statement without ids, ${rows.toLocaleString('en-US')} rows (staged: occurrence, seen before), ${server.described}`;
  const medianRun = [...runs].sort((a, b) => a.ms - b.ms)[Math.floor(runs.length / 2)]!;
  breakdowns.push({ figure, ms: medianRun.ms, refMs: turns.refMs, phases: medianRun.phases });
  return versus(figure, turns, 'psql \\copy, same columns and indexes (occurrence empty)', 'throughput', 0.5);
}

/** The cost per file: one run over an intake of many one-row files. */
async function perFileFigure(server: BenchServer): Promise<Figure> {
  await truncate(server);
  const ws = await Workspace.create(server.url);
  for (let i = 0; i < SMALL_FILES; i++) {
    await writeFile(join(ws.intake, `settle_20260903_${i}.csv`), sampleSettlement({ date: '2026-09-03', rows: 1, idPrefix: `S${i}` }).text);
  }
  quietDisk();
  const many = await measuredRun(ws);
  const byTenth = costByTenth(await readFile(join(ws.root, 'trace'), 'utf8'));
  await rm(ws.root, { recursive: true, force: true });
  const files = await server.client.query<{ n: string }>('SELECT count(*) AS n FROM settle.file_loads');
  expect(Number(files.rows[0]!.n)).toBe(SMALL_FILES);
  const perFile = many.ms / SMALL_FILES;
  return bounded(
    `per file, one run over ${SMALL_FILES.toLocaleString('en-US')} one-row files, ${server.described}`,
    perFile,
    `${perFile.toFixed(2)} ms`,
    '< 5 ms',
    perFile < 5,
    `run time ${s(many.ms)}; ms a file by tenth of the night ${byTenth.join(' ')}`,
  );
}

/** A run's cost per file in each tenth of its files, from its trace (one `before-open` a file): flat, or growing with the night. */
function costByTenth(trace: string): string[] {
  const opens = trace
    .split('\n')
    .filter((line) => line.startsWith('before-open '))
    .map((line) => Number(line.split(' ')[1]));
  const tenth = Math.floor(opens.length / 10);
  if (tenth === 0) return [];
  return Array.from({ length: 10 }, (_, i) => {
    const end = Math.min((i + 1) * tenth, opens.length - 1);
    return ((opens[end]! - opens[i * tenth]!) / (end - i * tenth)).toFixed(1);
  });
}

/** An idle run: migrated ledger, empty intake. */
async function idleFigure(server: BenchServer): Promise<Figure> {
  const ws = await Workspace.create(server.url);
  quietDisk();
  const idle: number[] = [];
  const node: number[] = [];
  for (let i = 0; i < 5; i++) {
    idle.push((await measuredRun(ws)).ms);
    // the floor under it on this machine, in the same turns: Node.js starting and doing nothing
    node.push(await timed(() => execFileSync(process.execPath, ['-e', '0'], { env: { PATH: process.env.PATH ?? '' } })));
  }
  await rm(ws.root, { recursive: true, force: true });
  const ms = median(idle);
  return bounded(
    `idle run (empty intake, migrated ledger), ${server.described}`,
    ms,
    `${ms.toFixed(0)} ms`,
    '< 150 ms',
    ms < 150,
    `node -e 0: ${median(node).toFixed(0)} ms`,
  );
}

/**
 * Staging + SHA-256 through the CLI: a file whose header the layout lacks costs a run one staged
 * copy, one hash and a reject; the reference writes the same copy while it hashes.
 */
async function stagingFigure(server: BenchServer): Promise<Figure> {
  const big = join(dir, 'headerless.csv');
  await writeHeaderless(big, STAGING_BYTES);
  const staged = join(dir, 'tee-staging');
  let ws: Workspace | undefined;
  const turns = await inTurns(
    TURNS,
    () => execFileSync('sh', ['-c', `tee '${staged}' < '${big}' | openssl dgst -sha256 > /dev/null`]),
    () => measuredRun(ws!, 1),
    {
      // each copy is removed before the next turn, as a run removes its own
      reference: () => rm(staged, { force: true }),
      ours: async () => {
        await rm(staged, { force: true });
        if (ws) await rm(ws.root, { recursive: true, force: true });
        ws = await workspaceWith(server, big, 'settle_20260904_big.csv');
      },
    },
  );
  if (ws) {
    expect(await ws.files('rejected')).toEqual(['settle_20260904_big.csv']);
    await rm(ws.root, { recursive: true, force: true });
  }
  await rm(staged, { force: true });
  await rm(big);
  return versus(
    `stage + SHA-256 of ${mib(STAGING_BYTES)} through the CLI (a reject)`,
    turns,
    'tee STAGING < FILE \\| openssl dgst -sha256',
    'speed',
    0.75,
  );
}

it(`measures settle-ingest against its references and goals on ${ROWS.toLocaleString('en-US')} rows`, async () => {
  const figures: Figure[] = [];

  const intakeDir = join(dir, 'intake');
  await mkdir(intakeDir);
  const name = 'settle_20260901_a01.csv';
  const file = join(intakeDir, name);
  const size = await writeSettlement(file, ROWS);
  const entry = { name, size, mtimeMs: (await stat(file)).mtimeMs };
  const staging = await mkdtemp(join(tmpdir(), 'settle-bench-staging-'));
  let seq = 0;
  // each staged copy is removed before the next, as a run removes its own: dirty pages piling up measure the disk, not the copy
  const dropStaged = () =>
    Promise.all([rm(join(staging, String(seq - 1)), { force: true }), rm(join(staging, `${seq - 1}.content`), { force: true })]);
  const folders = { intake: intakeDir, archive: join(dir, 'a'), duplicates: join(dir, 'd'), rejected: join(dir, 'r') };

  // 1. a gzipped delivery: staged, decoded and both hashed in its one read, against gzip -dc into openssl
  {
    const local = await LocalIntake.open(folders);
    const gzName = `${name}.gz`;
    const gzFile = join(intakeDir, gzName);
    execFileSync('sh', ['-c', `gzip -6 -n -c '${file}' > '${gzFile}'`]);
    const gzEntry = { name: gzName, size: (await stat(gzFile)).size, mtimeMs: (await stat(gzFile)).mtimeMs };
    const turns = await inTurns(
      TURNS,
      () => execFileSync('sh', ['-c', `gzip -dc '${gzFile}' | openssl dgst -sha256`]),
      async () => {
        const staged = await stageAndHash(local, gzEntry, staging, seq++, DECODE);
        if (staged.kind !== 'staged' || staged.content.kind !== 'content') throw new Error('the gzip did not decode');
      },
      { ours: dropStaged },
    );
    await dropStaged();
    await rm(gzFile);
    figures.push(versus('stage + gunzip + both SHA-256 (local gzip)', turns, 'gzip -dc \\| openssl dgst -sha256', 'speed', 0.75));
  }

  // 2. each server alone, started for its figures and stopped before the next: the shipped server's
  // own background work, idle beside the fast one, spoiled three of five turns of the fast load
  // (0.74x where the fast server alone gave 0.91x, docs/bench/DIARY.md 2026-12-06)
  const loadFiles = new Map<number, { file: string; size: number }>([[ROWS, { file, size }]]);
  const loadFile = async (rows: number) => {
    if (!loadFiles.has(rows)) {
      const bigDir = join(dir, `intake-${rows}`);
      await mkdir(bigDir);
      const bigFile = join(bigDir, name);
      loadFiles.set(rows, { file: bigFile, size: await writeSettlement(bigFile, rows) });
    }
    return loadFiles.get(rows)!;
  };
  const statementFile = join(dir, 'statement.csv');
  if (STATEMENT_ROWS > 0) await writeStatement(statementFile, STATEMENT_ROWS);
  for (const [i, serverName] of SERVERS.entries()) {
    const server = await startBenchServer(serverName);
    servers.push(server);
    try {
      // the staging figure's run needs a database, any: the first server's
      if (i === 0) figures.push(await stagingFigure(server));
      // the load and its memory, for each size (the first is the file the rows above and below use too)
      for (const rows of LOAD_ROWS) {
        const { file: rowsFile, size: rowsSize } = await loadFile(rows);
        figures.push(...(await loadFigures(server, rowsFile, name, rowsSize, rows)));
      }
      // peak memory on a much larger file: memory must not grow with the file
      if (i === 0 && BIG_ROWS > 0) {
        await truncate(server);
        const ws = await Workspace.create(server.url);
        const bigSize = await writeSettlement(join(ws.intake, 'settle_20260902_big.csv'), BIG_ROWS);
        const big = await measuredRun(ws);
        await rm(ws.root, { recursive: true, force: true });
        figures.push(
          bounded(
            `peak RSS, ${BIG_ROWS.toLocaleString('en-US')} rows (${mib(bigSize)}), ${server.described}`,
            big.rssMiB,
            `${big.rssMiB.toFixed(0)} MiB`,
            '< 150 MiB',
            big.rssMiB < 150,
            `run time ${s(big.ms)}`,
          ),
        );
      }
      // the staged load of a statement without ids
      if (STATEMENT_ROWS > 0) figures.push(await stagedFigure(server, statementFile, STATEMENT_ROWS));
      // the cost per file and an idle run
      figures.push(await perFileFigure(server));
      figures.push(await idleFigure(server));
    } finally {
      servers.splice(servers.indexOf(server), 1);
      await server.stop();
    }
  }
  for (const [rows, { file: rowsFile }] of loadFiles) if (rows !== ROWS) await rm(dirname(rowsFile), { recursive: true, force: true });

  // 3. download + hash over SFTP against OpenSSH's own sftp client followed by openssl
  if (has('/usr/sbin/sshd') && has('sftp')) {
    const sshd = await TestSshd.start();
    try {
      const loc = { user: sshd.user, host: '127.0.0.1', port: sshd.port, path: intakeDir };
      const sftp = await SftpIntake.open(
        loc,
        folders,
        { keyPath: sshd.clientKey },
        HostKeyPolicy.fromKnownHosts(sshd.knownHosts, '127.0.0.1', sshd.port),
        { timeoutMs: 60_000, minBytesPerSecond: 1024 },
        pino({ level: 'silent' }),
      );
      const got = join(dir, 'got.csv');
      const sftpArgs = ['-q', '-b', '-', '-i', sshd.clientKey, '-o', `UserKnownHostsFile=${sshd.knownHosts}`, '-P', String(sshd.port)];
      const turns = await inTurns(
        TURNS,
        () => {
          execFileSync('sftp', [...sftpArgs, `${sshd.user}@127.0.0.1`], { input: `get ${file} ${got}\n` });
          execFileSync('openssl', ['dgst', '-sha256', got]);
        },
        () => stageAndHash(sftp, entry, staging, seq++),
        { reference: () => rm(got, { force: true }), ours: dropStaged },
      );
      await sftp.close();
      figures.push(versus('download + SHA-256 (SFTP)', turns, 'sftp get + openssl dgst', 'speed', 0.8));
    } finally {
      await sshd.destroy();
    }
  } else {
    console.log('sshd or sftp not found: the SFTP row is skipped');
  }
  await rm(staging, { recursive: true, force: true });

  await mkdir('.test-output', { recursive: true });
  const title = `settle-ingest bench: ${ROWS.toLocaleString('en-US')} rows, ${(size / 2 ** 20).toFixed(1)} MiB; ${TURNS} turns each, medians; ${new Date().toISOString().slice(0, 16)}; load average at the end ${load().toFixed(1)}`;
  const phaseLines = [
    '',
    `where the whole run's wall time goes (its median turn; ms by phase, from the test package's trace, src/faults.ts)`,
    '',
    `| run | whole | \\copy | ${PHASES.join(' | ')} |`,
    `| --- | ---: | ---: | ${PHASES.map(() => '---:').join(' | ')} |`,
    ...breakdowns.map(
      (b) => `| ${b.figure} | ${b.ms.toFixed(0)} | ${b.refMs.toFixed(0)} | ${PHASES.map((p) => b.phases[p].toFixed(0)).join(' | ')} |`,
    ),
  ];
  const turnLines = [
    '',
    'each turn of the figures against a reference, in order: reference / ours, s (the ratio is the median of their ratios)',
    '',
    ...figures.flatMap((f) => (f.turns ? [`- ${f.figure}: ${f.turns.map(([ref, ours]) => `${s(ref)} / ${s(ours)}`).join(', ')}`] : [])),
  ];
  console.log(`\n${await writeTable(title, figures, [...phaseLines, ...turnLines])}`);

  // every figure is a real measurement (and, where it has one, so is its reference)
  const want = ['stage + SHA-256', 'stage + gunzip', 'the whole run', 'peak RSS of that run', 'per file', 'idle run'];
  for (const w of want) expect(figures.filter((f) => f.figure.startsWith(w)).length, w).toBeGreaterThan(0);
  expect(figures.filter((f) => f.figure.startsWith('the whole run,'))).toHaveLength(SERVERS.length * LOAD_ROWS.length);
  if (STATEMENT_ROWS > 0) expect(figures.filter((f) => f.figure.startsWith('the whole run of a statement'))).toHaveLength(SERVERS.length);
  // each breakdown accounts for its whole run
  for (const b of breakdowns) expect(Math.abs(PHASES.reduce((sum, p) => sum + b.phases[p], 0) - b.ms)).toBeLessThan(1);
  if (BIG_ROWS > 0) expect(figures.some((f) => f.figure.startsWith(`peak RSS, ${BIG_ROWS.toLocaleString('en-US')}`))).toBe(true);
  for (const f of figures) {
    for (const m of f.measured) expect(Number.isFinite(m) && m > 0, `${f.figure}: ${m}`).toBe(true);
  }
});
