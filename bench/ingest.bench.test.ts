import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { expect, it } from 'vitest';
import { sampleSettlement } from '../src/demo/sampleSettlement.js';
import { HostKeyPolicy } from '../src/intake/hostKeys.js';
import { LocalIntake } from '../src/intake/localIntake.js';
import { SftpIntake } from '../src/intake/sftpIntake.js';
import { stageAndHash } from '../src/pipeline/stageAndHash.js';
import { BIN } from '../test/support/cli.js';
import { TestSshd } from '../test/support/sshd.js';
import { sharedFinanceDatabase, Workspace } from '../test/support/workspace.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
/** a second, much larger file whose peak memory is measured too (0: skipped) */
const BIG_ROWS = Number(process.env.BENCH_BIG_ROWS ?? 0);
const SMALL_FILES = Number(process.env.BENCH_SMALL_FILES ?? 10_000);
const REPEAT = 3;

const db = sharedFinanceDatabase();
/** no keys: gzip and zip need none */
const DECODE = {
  decryptionKey: undefined,
  verificationKey: undefined,
  maxInflateRatio: 100,
  maxDecodedBytes: 16 * 1024 ** 3,
  memberPattern: undefined,
};

interface Figure {
  figure: string;
  ours: string;
  reference: string;
  ref: string;
  /** how we compare, in the goal's own terms */
  ratio: string;
  goal: string;
  /** undefined: a figure without a goal */
  holds?: boolean;
  measured: number[];
}

/** A figure against its reference measured in the same run: our speed (or throughput) as a share of the reference's. */
function versus(figure: string, oursMs: number, reference: string, refMs: number, terms: 'speed' | 'throughput', goal: number): Figure {
  return {
    figure,
    ours: s(oursMs),
    reference,
    ref: s(refMs),
    ratio: `${(refMs / oursMs).toFixed(2)}× its ${terms}`,
    goal: `≥ ${goal}×`,
    holds: refMs / oursMs >= goal,
    measured: [oursMs, refMs],
  };
}

function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

async function timed(fn: () => Promise<unknown> | unknown, before?: () => Promise<unknown>, repeat = REPEAT): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < repeat; i++) {
    await before?.();
    const t0 = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(times);
}

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

/** One `settle-ingest run` as cron starts it, under GNU time: wall time, peak RSS and the summary. */
async function measuredRun(ws: Workspace): Promise<{ ms: number; rssMiB: number; stdout: string }> {
  const rssFile = join(ws.root, 'maxrss');
  const env: Record<string, string> = { DATABASE_URL: ws.databaseUrl };
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[k]) env[k] = process.env[k]!;
  const t0 = process.hrtime.bigint();
  // the executable itself, through its #! line (and the V8 flags there), as cron and systemd start it
  const child = spawn('/usr/bin/time', ['-f', '%M', '-o', rssFile, BIN, ...ws.runArgs()], {
    env,
    cwd: ws.root,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (status !== 0) throw new Error(`settle-ingest run exited ${status}: ${stdout}`);
  return { ms, rssMiB: Number((await readFile(rssFile, 'utf8')).trim()) / 1024, stdout };
}

/** A settlement file of `rows` rows written in blocks, so that a file of any size costs this process little memory. */
async function writeSettlement(path: string, rows: number): Promise<number> {
  const out = createWriteStream(path);
  const block = 200_000;
  for (let done = 0, n = 0; done < rows; done += block, n++) {
    const text = sampleSettlement({ date: '2026-09-01', rows: Math.min(block, rows - done), idPrefix: `B${n}` }).text;
    if (!out.write(n === 0 ? text : text.slice(text.indexOf('\n') + 1))) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((r) => out.end(() => r()));
  return (await stat(path)).size;
}

const truncate = () => db.client.query('TRUNCATE settle.settlement_rows, settle.loads, settle.file_loads');
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

it(`measures settle-ingest against its references and goals on ${ROWS.toLocaleString('en-US')} rows`, async () => {
  for (const tool of ['openssl', 'psql', '/usr/bin/time']) expect(has(tool), `${tool} is needed for a reference`).toBe(true);
  const dir = await mkdtemp(join(tmpdir(), 'settle-bench-'));
  const intakeDir = join(dir, 'intake');
  await mkdir(intakeDir);
  const name = 'settle_20260901_a01.csv';
  const file = join(intakeDir, name);
  const size = await writeSettlement(file, ROWS);
  const entry = { name, size, mtimeMs: (await stat(file)).mtimeMs };
  const figures: Figure[] = [];
  const staging = await mkdtemp(join(tmpdir(), 'settle-bench-staging-'));
  let seq = 0;

  // 1. one read that stages and hashes, against openssl's hash alone
  const folders = { intake: intakeDir, archive: join(dir, 'a'), duplicates: join(dir, 'd'), rejected: join(dir, 'r') };
  const local = await LocalIntake.open(folders);
  // each staged copy is removed before the next, as a run removes its own: dirty pages piling up measure the disk, not the copy
  const dropStaged = () => rm(join(staging, String(seq - 1)), { force: true });
  const stageMs = await timed(() => stageAndHash(local, entry, staging, seq++), dropStaged);
  const opensslMs = await timed(() => execFileSync('openssl', ['dgst', '-sha256', file]));
  figures.push(versus('stage + SHA-256 (local)', stageMs, 'openssl dgst -sha256', opensslMs, 'speed', 0.75));

  // 1b. a gzipped delivery: staged, decoded and both hashed in its one read, against gzip -dc into openssl
  {
    const gzName = `${name}.gz`;
    const gzFile = join(intakeDir, gzName);
    execFileSync('sh', ['-c', `gzip -6 -n -c '${file}' > '${gzFile}'`]);
    const gzEntry = { name: gzName, size: (await stat(gzFile)).size, mtimeMs: (await stat(gzFile)).mtimeMs };
    const decode = { ...DECODE, maxInflateRatio: 1000 };
    const dropBoth = () => Promise.all([dropStaged(), rm(join(staging, `${seq - 1}.content`), { force: true })]);
    const oursGz = await timed(async () => {
      const staged = await stageAndHash(local, gzEntry, staging, seq++, decode);
      if (staged.kind !== 'staged' || staged.content.kind !== 'content') throw new Error('the gzip did not decode');
    }, dropBoth);
    await dropBoth();
    const refGz = await timed(() => execFileSync('sh', ['-c', `gzip -dc '${gzFile}' | openssl dgst -sha256`]));
    figures.push(versus('stage + gunzip + both SHA-256 (local gzip)', oursGz, 'gzip -dc \\| openssl dgst -sha256', refGz, 'speed', 0.75));
    await rm(gzFile);
  }

  // 2. a whole run against psql \copy of the same file into a table of the same shape without the foreign key
  const header = (await readFile(file, 'utf8')).slice(0, 2000).split('\n')[0]!.split(',');
  await db.client.query('DROP TABLE IF EXISTS public.bench_ref');
  // LIKE never copies a foreign key; the provenance columns the file has no values for may stay empty
  await db.client.query('CREATE TABLE public.bench_ref (LIKE settle.settlement_rows INCLUDING DEFAULTS INCLUDING INDEXES)');
  const notNull = await db.client.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'bench_ref' AND is_nullable = 'NO'`,
  );
  for (const { column_name } of notNull.rows.filter((c) => !header.includes(c.column_name))) {
    await db.client.query(`ALTER TABLE public.bench_ref ALTER COLUMN ${column_name} DROP NOT NULL`);
  }
  // the reference and our run take turns, so a busy minute on a shared machine weighs on both alike
  const copies: number[] = [];
  const runs: { ms: number; rssMiB: number }[] = [];
  for (let i = 0; i < REPEAT; i++) {
    copies.push(
      await timed(
        () =>
          execFileSync('psql', [
            db.url,
            '-q',
            '-c',
            `\\copy public.bench_ref (${header.join(', ')}) FROM '${file}' WITH (FORMAT csv, HEADER)`,
          ]),
        () => db.client.query('TRUNCATE public.bench_ref'),
        1,
      ),
    );
    await truncate();
    const ws = await Workspace.create(db.url);
    await copyFile(file, join(ws.intake, name));
    runs.push(await measuredRun(ws));
    await rm(ws.root, { recursive: true, force: true });
  }
  const copyMs = median(copies);
  const loaded = await db.client.query<{ n: string }>('SELECT count(*) AS n FROM settle.settlement_rows');
  expect(Number(loaded.rows[0]!.n)).toBe(ROWS);
  const runMs = median(runs.map((r) => r.ms));
  figures.push(
    versus(
      `settle-ingest run, ${ROWS.toLocaleString('en-US')} rows`,
      runMs,
      'psql \\copy, same columns and indexes, no FK',
      copyMs,
      'throughput',
      0.9,
    ),
  );
  const rss = median(runs.map((r) => r.rssMiB));
  figures.push({
    figure: `peak RSS of that run (${(size / 2 ** 20).toFixed(0)} MiB file)`,
    ours: `${rss.toFixed(0)} MiB`,
    reference: '—',
    ref: '—',
    ratio: '—',
    goal: '< 150 MiB',
    holds: rss < 150,
    measured: [rss],
  });

  // 3. peak memory on a much larger file: memory must not grow with the file
  if (BIG_ROWS > 0) {
    await truncate();
    const ws = await Workspace.create(db.url);
    const bigSize = await writeSettlement(join(ws.intake, 'settle_20260902_big.csv'), BIG_ROWS);
    const big = await measuredRun(ws);
    await rm(ws.root, { recursive: true, force: true });
    figures.push({
      figure: `peak RSS, ${BIG_ROWS.toLocaleString('en-US')} rows (${(bigSize / 2 ** 20).toFixed(0)} MiB)`,
      ours: `${big.rssMiB.toFixed(0)} MiB`,
      reference: `run time ${s(big.ms)}`,
      ref: '—',
      ratio: '—',
      goal: '< 150 MiB',
      holds: big.rssMiB < 150,
      measured: [big.rssMiB],
    });
  }

  // 4. the cost per file: one run over an intake of many one-row files
  {
    await truncate();
    const ws = await Workspace.create(db.url);
    for (let i = 0; i < SMALL_FILES; i++) {
      await writeFile(
        join(ws.intake, `settle_20260903_${i}.csv`),
        sampleSettlement({ date: '2026-09-03', rows: 1, idPrefix: `S${i}` }).text,
      );
    }
    const many = await measuredRun(ws);
    await rm(ws.root, { recursive: true, force: true });
    const files = await db.client.query<{ n: string }>('SELECT count(*) AS n FROM settle.file_loads');
    expect(Number(files.rows[0]!.n)).toBe(SMALL_FILES);
    const perFile = many.ms / SMALL_FILES;
    figures.push({
      figure: `per file, one run over ${SMALL_FILES.toLocaleString('en-US')} one-row files`,
      ours: `${perFile.toFixed(2)} ms`,
      reference: `run time ${s(many.ms)}`,
      ref: '—',
      ratio: '—',
      goal: '< 5 ms',
      holds: perFile < 5,
      measured: [perFile],
    });
  }

  // 5. an idle run: migrated ledger, empty intake
  {
    const ws = await Workspace.create(db.url);
    const idle: number[] = [];
    for (let i = 0; i < 5; i++) idle.push((await measuredRun(ws)).ms);
    await rm(ws.root, { recursive: true, force: true });
    const idleMs = median(idle);
    figures.push({
      figure: 'idle run (empty intake, migrated ledger)',
      ours: `${idleMs.toFixed(0)} ms`,
      reference: '—',
      ref: '—',
      ratio: '—',
      goal: '< 400 ms',
      holds: idleMs < 400,
      measured: [idleMs],
    });
  }

  // 6. download + hash over SFTP against OpenSSH's own sftp client followed by openssl
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
      const oursSftp = await timed(() => stageAndHash(sftp, entry, staging, seq++), dropStaged);
      await sftp.close();
      const got = join(dir, 'got.csv');
      const sftpArgs = ['-q', '-b', '-', '-i', sshd.clientKey, '-o', `UserKnownHostsFile=${sshd.knownHosts}`, '-P', String(sshd.port)];
      const refSftp = await timed(async () => {
        await rm(got, { force: true });
        execFileSync('sftp', [...sftpArgs, `${sshd.user}@127.0.0.1`], { input: `get ${file} ${got}\n` });
        execFileSync('openssl', ['dgst', '-sha256', got]);
      });
      figures.push({
        figure: 'download + SHA-256 (SFTP)',
        ours: s(oursSftp),
        reference: 'sftp get + openssl dgst',
        ref: s(refSftp),
        ratio: `${(refSftp / oursSftp).toFixed(2)}× its speed`,
        goal: '—',
        measured: [oursSftp, refSftp],
      });
    } finally {
      await sshd.destroy();
    }
  } else {
    console.log('sshd or sftp not found: the SFTP row is skipped');
  }

  const lines = [
    `settle-ingest bench: ${ROWS.toLocaleString('en-US')} rows, ${(size / 2 ** 20).toFixed(1)} MiB, median of ${REPEAT}, ${new Date().toISOString().slice(0, 10)}`,
    '',
    '| figure | settle-ingest | reference | reference figure | ratio | goal | holds |',
    '| --- | ---: | --- | ---: | ---: | ---: | --- |',
    ...figures.map(
      (f) =>
        `| ${f.figure} | ${f.ours} | ${f.reference} | ${f.ref} | ${f.ratio} | ${f.goal} | ${f.holds === undefined ? '—' : f.holds ? 'yes' : 'NO'} |`,
    ),
  ];
  console.log(`\n${lines.join('\n')}\n`);
  await mkdir('.test-output', { recursive: true });
  await writeFile('.test-output/bench.md', `${lines.join('\n')}\n`);
  await db.client.query('DROP TABLE IF EXISTS public.bench_ref');
  await rm(dir, { recursive: true, force: true });
  await rm(staging, { recursive: true, force: true });
  // every figure is a real measurement (and, where it has one, so is its reference)
  const want = ['stage + SHA-256', 'stage + gunzip', 'settle-ingest run', 'peak RSS of that run', 'per file', 'idle run'];
  for (const w of want)
    expect(
      figures.some((f) => f.figure.startsWith(w)),
      w,
    ).toBe(true);
  if (BIG_ROWS > 0) expect(figures.some((f) => f.figure.startsWith(`peak RSS, ${BIG_ROWS.toLocaleString('en-US')}`))).toBe(true);
  for (const f of figures) {
    for (const m of f.measured) expect(Number.isFinite(m) && m > 0, `${f.figure}: ${m}`).toBe(true);
  }
});
