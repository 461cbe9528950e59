import { realpathSync, statSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import pg from 'pg';
import { resolveSettings } from '../config/settings.js';
import { loadEmbeddedPostgres, startEmbeddedPostgres } from '../demo/embeddedPostgres.js';
import { sampleSettlement } from '../demo/sampleSettlement.js';
import { migrateAll } from './migrateCommand.js';
import { ingestOnce } from './runCommand.js';
import { summaryLine } from './summaryOutput.js';

const say = (text = '') => process.stdout.write(`${text}\n`);

/**
 * How the person who ran the demo runs this tool again: `settle-ingest` when that name on PATH is
 * this very program (an installed package), else `npx settle-ingest` (a checkout).
 */
function invocation(): string {
  const self = process.argv[1] ? realpathSync(process.argv[1]) : '';
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'settle-ingest');
    try {
      if (statSync(candidate).isFile() && realpathSync(candidate) === self) return 'settle-ingest';
    } catch {
      // not in this folder
    }
  }
  return 'npx settle-ingest';
}

/**
 * Replays the incident night on a throwaway PostgreSQL through the real `run` code path:
 * a01 loaded, its renamed resend a02 skipped, the operator's re-run harmless, a bad file rejected.
 * The database always stops; the workspace (folders, ledger, log) is removed unless `keep`, when
 * it stays for inspection with the commands to look at it.
 */
export async function runDemo(opts: { keep: boolean } = { keep: false }): Promise<number> {
  await loadEmbeddedPostgres(); // before the workspace: a missing package leaves nothing behind
  const workspace = await mkdtemp(join(tmpdir(), 'settle-demo-'));
  await chmod(workspace, 0o755); // the database server may run as another user and must enter it
  const intake = join(workspace, 'intake');
  await mkdir(intake);
  say(`settle-ingest demo — workspace ${workspace}`);
  say('starting an embedded PostgreSQL on 127.0.0.1 …');
  const server = await startEmbeddedPostgres(join(workspace, 'postgres'));
  try {
    await server.createDatabase('finance');
    const settings = resolveSettings(
      {
        intake,
        ledger: join(workspace, 'settle-ledger.sqlite'),
        databaseUrl: server.url('finance'),
        stableFor: 0,
        logFile: join(workspace, 'settle-ingest.log'),
      },
      {},
    );
    say(await migrateAll(settings));

    const a01 = sampleSettlement({ date: '2026-03-14', rows: 1240, idPrefix: 'T20260314' });
    let worst = 0;
    const night = async (caption: string) => {
      say();
      say(caption);
      const ingestResult = await ingestOnce(settings, { mode: 'manual' });
      worst = Math.max(worst, ingestResult.exitStatus);
      say(`  ${summaryLine(ingestResult)}`);
      for (const fileOutcome of ingestResult.files.filter((x) => x.outcome !== 'loaded')) {
        const why = fileOutcome.duplicateOf
          ? `same bytes as ${fileOutcome.duplicateOf.name}, loaded by run ${fileOutcome.duplicateOf.run}`
          : (fileOutcome.error ?? '');
        say(`    ${fileOutcome.outcome}: ${fileOutcome.name}${why ? ` — ${why}` : ''}`);
      }
    };

    await writeFile(join(intake, 'settle_20260314_a01.csv'), a01.text);
    await night('02:00 the partner uploads settle_20260314_a01.csv (1,240 rows); the scheduled run:');
    await writeFile(join(intake, 'settle_20260314_a02.csv'), a01.text);
    await night("02:20 the partner's uploader retries: the same bytes as settle_20260314_a02.csv; the next run:");
    await night('08:30 an operator re-runs the job "to be safe":');
    const bad = sampleSettlement({ date: '2026-03-15', rows: 20, idPrefix: 'T20260315' }).text.split('\n');
    bad[16] = bad[16]!.replace(/,(-?\d+\.\d\d),/, ',12.5O,'); // a letter O where a zero belongs, on line 17
    await writeFile(join(intake, 'settle_20260315_a01.csv'), bad.join('\n'));
    await night('the next night a file arrives with a typo in an amount:');

    const db = new pg.Client({ connectionString: server.url('finance') });
    await db.connect();
    const totals = await db.query<{ files: string; rows: string; net: string }>(
      'SELECT (SELECT count(*) FROM settle.file_loads) AS files, count(*) AS rows, sum(net_amount)::text AS net FROM settle.settlement_rows',
    );
    await db.end();
    const totalsRow = totals.rows[0]!;
    say();
    say(
      `finance database: ${totalsRow.files} file loaded, ${totalsRow.rows} rows, net total ${totalsRow.net} (file's own total ${a01.netTotal})`,
    );
    say();
    const command = invocation();
    if (opts.keep) {
      say('where to look:');
      for (const folder of ['intake', 'archive', 'duplicates', 'rejected']) {
        const names = await readdir(join(workspace, folder)).catch(() => []);
        say(`  ${join(workspace, folder).padEnd(workspace.length + 12)} ${names.join(', ') || '(empty)'}`);
      }
      say(`  ledger:  ${settings.ledger}`);
      say(`           ${command} report runs --ledger ${settings.ledger}`);
      say(`           ${command} history settle_20260314_a02.csv --ledger ${settings.ledger}`);
      say(`  logs:    ${settings.logFile}   (one JSON line per decision)`);
      say(`  (the workspace stays until you remove it: rm -r ${workspace})`);
    } else {
      say(`to look at the folders, the ledger and the log afterwards: ${command} demo --keep`);
    }
    return worst === 1 ? 0 : worst; // the rejected file is part of the story, not a demo failure
  } finally {
    await server.stop();
    await rm(opts.keep ? join(workspace, 'postgres') : workspace, { recursive: true, force: true });
    say(`embedded PostgreSQL stopped${opts.keep ? '' : '; workspace removed'}.`);
  }
}
