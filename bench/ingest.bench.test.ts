import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { expect, it } from 'vitest';
import { sampleSettlement } from '../src/demo/sampleSettlement.js';
import { HostKeyPolicy } from '../src/intake/hostKeys.js';
import { LocalIntake } from '../src/intake/localIntake.js';
import { SftpIntake } from '../src/intake/sftpIntake.js';
import { stageAndHash } from '../src/pipeline/stageAndHash.js';
import { TestSshd } from '../test/support/sshd.js';
import { sharedFinanceDatabase, Workspace } from '../test/support/workspace.js';

const ROWS = Number(process.env.BENCH_ROWS ?? 300_000);
const REPEAT = 3;

const db = sharedFinanceDatabase();

async function median(fn: () => Promise<unknown> | unknown, before?: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < REPEAT; i++) {
    await before?.();
    const t0 = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return times.sort((a, b) => a - b)[Math.floor(REPEAT / 2)]!;
}

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

it(`measures settle-ingest against openssl, psql \\copy and OpenSSH sftp on ${ROWS.toLocaleString('en-US')} rows`, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'settle-bench-'));
  const intakeDir = join(dir, 'intake');
  await mkdir(intakeDir);
  const name = 'settle_20260901_a01.csv';
  const text = sampleSettlement({ date: '2026-09-01', rows: ROWS, idPrefix: 'BENCH' }).text;
  const file = join(intakeDir, name);
  await writeFile(file, text);
  const size = (await stat(file)).size;
  const entry = { name, size, mtimeMs: (await stat(file)).mtimeMs };
  const results: { step: string; ours: number; reference: string; ref: number }[] = [];

  // 1. one read that stages and hashes, against openssl's hash alone
  const local = await LocalIntake.open({
    intake: intakeDir,
    archive: join(dir, 'a'),
    duplicates: join(dir, 'd'),
    rejected: join(dir, 'r'),
  });
  const staging = await mkdtemp(join(tmpdir(), 'settle-bench-staging-'));
  let seq = 0;
  const ours = await median(() => stageAndHash(local, entry, staging, seq++));
  const ref = await median(() => execFileSync('openssl', ['dgst', '-sha256', file]));
  results.push({ step: 'stage + SHA-256 (local)', ours, reference: 'openssl dgst -sha256', ref });

  // 2. a whole run (hash, validate every field, COPY, file marker, move) against psql \copy of the same file
  if (has('psql')) {
    await db.client.query(
      `CREATE TABLE public.bench_ref AS SELECT settlement_date, transaction_id, merchant_id, card_brand, transaction_type,
         gross_amount, fee_amount, net_amount, currency FROM settle.settlement_rows WITH NO DATA`,
    );
    await db.client.query('ALTER TABLE public.bench_ref ADD UNIQUE (transaction_id)');
    const refLoad = await median(
      () => execFileSync('psql', [db.url, '-q', '-c', `\\copy public.bench_ref FROM '${file}' WITH (FORMAT csv, HEADER)`]),
      () => db.client.query('TRUNCATE public.bench_ref'),
    );
    let ws: Workspace | undefined;
    const ourLoad = await median(
      async () => {
        const r = await ws!.run();
        expect(r.status).toBe(0);
      },
      async () => {
        await db.client.query('TRUNCATE settle.settlement_rows, settle.loads, settle.file_loads');
        ws = await Workspace.create(db.url);
        await writeFile(join(ws.intake, name), text);
      },
    );
    results.push({
      step: 'settle-ingest run (end to end)',
      ours: ourLoad,
      reference: 'psql \\copy, bare table + unique key',
      ref: refLoad,
    });

    // the same rows with their provenance into the real table (foreign key, two indexes): the schema's own cost
    const withProvenance = join(dir, 'provenance.csv');
    const sha = 'f'.repeat(64);
    await writeFile(
      withProvenance,
      text
        .trimEnd()
        .split('\n')
        .slice(1)
        .map((l, i) => `${l},${sha},${name},${i + 2},r-bench`)
        .join('\n') + '\n',
    );
    const schemaLoad = await median(
      () =>
        execFileSync('psql', [
          db.url,
          '-q',
          '-c',
          `\\copy settle.settlement_rows (settlement_date, transaction_id, merchant_id, card_brand, transaction_type, gross_amount, fee_amount, net_amount, currency, source_sha256, source_name, source_line, run_id) FROM '${withProvenance}' WITH (FORMAT csv)`,
        ]),
      async () => {
        await db.client.query('TRUNCATE settle.settlement_rows, settle.loads, settle.file_loads');
        await db.client.query(`INSERT INTO settle.file_loads (sha256, file_name, run_id, row_count) VALUES ($1, $2, 'r-bench', 0)`, [
          sha,
          name,
        ]);
      },
    );
    results.push({
      step: 'settle-ingest run (end to end)',
      ours: ourLoad,
      reference: 'psql \\copy into settle.settlement_rows',
      ref: schemaLoad,
    });
  } else {
    console.log('psql not found: the load reference is skipped (apt-get install postgresql-client)');
  }

  // 3. download + hash over SFTP against OpenSSH's own sftp client followed by openssl
  if (has('/usr/sbin/sshd') && has('sftp')) {
    const sshd = await TestSshd.start();
    try {
      const loc = { user: sshd.user, host: '127.0.0.1', port: sshd.port, path: intakeDir };
      const sftp = await SftpIntake.open(
        loc,
        { intake: intakeDir, archive: join(dir, 'a'), duplicates: join(dir, 'd'), rejected: join(dir, 'r') },
        { keyPath: sshd.clientKey },
        HostKeyPolicy.fromKnownHosts(sshd.knownHosts, '127.0.0.1', sshd.port),
        pino({ level: 'silent' }),
      );
      const oursSftp = await median(() => stageAndHash(sftp, entry, staging, seq++));
      await sftp.close();
      const got = join(dir, 'got.csv');
      const refSftp = await median(async () => {
        await rm(got, { force: true });
        execFileSync(
          'sftp',
          [
            '-q',
            '-b',
            '-',
            '-i',
            sshd.clientKey,
            '-o',
            `UserKnownHostsFile=${sshd.knownHosts}`,
            '-P',
            String(sshd.port),
            `${sshd.user}@127.0.0.1`,
          ],
          {
            input: `get ${file} ${got}\n`,
          },
        );
        execFileSync('openssl', ['dgst', '-sha256', got]);
      });
      results.push({ step: 'download + SHA-256 (SFTP)', ours: oursSftp, reference: 'sftp get + openssl dgst', ref: refSftp });
    } finally {
      await sshd.destroy();
    }
  }

  const mb = (size / 1024 / 1024).toFixed(1);
  const lines = [
    `settle-ingest bench: ${ROWS.toLocaleString('en-US')} rows, ${mb} MiB, median of ${REPEAT}, ${new Date().toISOString().slice(0, 10)}`,
    '| step | settle-ingest | reference | reference time | ratio |',
    '| --- | ---: | --- | ---: | ---: |',
    ...results.map(
      (r) =>
        `| ${r.step} | ${(r.ours / 1000).toFixed(2)} s | ${r.reference} | ${(r.ref / 1000).toFixed(2)} s | ${(r.ours / r.ref).toFixed(2)}× |`,
    ),
  ];
  console.log(`\n${lines.join('\n')}\n`);
  await mkdir('.test-output', { recursive: true });
  await writeFile('.test-output/bench.md', `${lines.join('\n')}\n`);
  await rm(dir, { recursive: true, force: true });
  await rm(staging, { recursive: true, force: true });
  // every figure is a real measurement against a reference that ran in the same process
  expect(results.map((r) => r.step)).toContain('stage + SHA-256 (local)');
  for (const r of results) {
    expect(Number.isFinite(r.ours) && r.ours > 0, `${r.step}: ours`).toBe(true);
    expect(Number.isFinite(r.ref) && r.ref > 0, `${r.step}: ${r.reference}`).toBe(true);
  }
});
