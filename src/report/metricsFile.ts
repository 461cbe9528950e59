import { readFile, rename, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { errorMessage } from '../errors.js';
import type { Intake } from '../intake/intake.js';
import type { Ledger } from '../ledger/ledger.js';
import { ownerIsGone } from '../ledger/owner.js';
import type { RunCounts } from '../ledger/types.js';

export interface RunMetricsInput {
  startedAt: number;
  exitStatus: number;
  counts: RunCounts;
  /** absent when the ledger itself could not be opened */
  ledger?: Ledger;
  /** absent when the intake could not be reached */
  intake?: Intake;
}

const LAST_SUCCESS = 'settle_ingest_last_success_timestamp_seconds';

const OUTCOMES: [string, keyof RunCounts][] = [
  ['loaded', 'loaded'],
  ['skipped', 'skipped'],
  ['held', 'held'],
  ['rejected', 'rejected'],
  ['failed', 'failed'],
  ['not_ready', 'notReady'],
  ['ignored', 'ignored'],
  ['stale', 'stale'],
  ['move_failed', 'moveFailed'],
];

/** The last success from the ledger; without a ledger, what the previous file said (never reset to 0 by an outage). */
async function lastSuccess(path: string, ledger: Ledger | undefined): Promise<number> {
  if (ledger) {
    const ok = (await ledger.recentRuns(1000)).find((r) => r.exitStatus === 0 && r.mode !== 'reprocess');
    if (ok?.endedAt) return Date.parse(ok.endedAt) / 1000;
  }
  const previous = await readFile(path, 'utf8').catch(() => '');
  const m = new RegExp(`^${LAST_SUCCESS} (\\S+)$`, 'm').exec(previous);
  return m ? Number(m[1]) : 0;
}

async function staleClaims(ledger: Ledger | undefined): Promise<number> {
  if (!ledger) return 0;
  const claims = await ledger.filesInState('claimed');
  return claims.filter(
    (c) =>
      ownerIsGone({ host: c.ownerHost, pid: c.ownerPid, startedAt: c.ownerStartedAt }) ||
      (c.leaseUntil !== null && Date.parse(c.leaseUntil) < Date.now()),
  ).length;
}

/** Age of the oldest regular file still in the intake (0 when empty or unreachable). */
async function oldestWaiting(intake: Intake | undefined): Promise<number> {
  if (!intake) return 0;
  const files = (await intake.list().catch(() => [])).filter((f) => !f.notRegular);
  const oldest = Math.min(...files.map((f) => f.mtimeMs));
  return Number.isFinite(oldest) ? Math.max(0, (Date.now() - oldest) / 1000) : 0;
}

function gauge(name: string, help: string, samples: [string, number][]): string {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`];
  for (const [labels, value] of samples) lines.push(`${name}${labels} ${Number.isInteger(value) ? value : value.toFixed(3)}`);
  return lines.join('\n');
}

/**
 * The run as a Prometheus text file for node_exporter's textfile collector, written after
 * every run (also one that could not start) and replaced atomically: the collector never
 * reads half a file. A failure to write it is logged, never fatal to the run.
 */
export async function writeRunMetrics(path: string, m: RunMetricsInput, log: Logger): Promise<void> {
  try {
    const now = Date.now() / 1000;
    const text = [
      gauge('settle_ingest_last_run_timestamp_seconds', 'When the last run ended (Unix time).', [['', Math.round(now)]]),
      gauge(LAST_SUCCESS, 'When the last run that exited 0 ended (Unix time).', [['', Math.round(await lastSuccess(path, m.ledger))]]),
      gauge(
        'settle_ingest_last_run_files',
        'Files of the last run per outcome.',
        OUTCOMES.map(([label, key]) => [`{outcome="${label}"}`, m.counts[key] ?? 0]),
      ),
      gauge('settle_ingest_last_run_rows', 'Rows loaded by the last run.', [['', m.counts.rows]]),
      gauge('settle_ingest_last_run_duration_seconds', 'How long the last run took.', [['', (Date.now() - m.startedAt) / 1000]]),
      gauge('settle_ingest_last_run_exit_status', 'Exit status of the last run (0 ok, 1 problem, 2 configuration).', [['', m.exitStatus]]),
      gauge('settle_ingest_stale_claims', 'Claims in the ledger whose owner is gone or whose lease has passed.', [
        ['', await staleClaims(m.ledger)],
      ]),
      gauge('settle_ingest_oldest_waiting_file_age_seconds', 'Age of the oldest file still in the intake.', [
        ['', Math.round(await oldestWaiting(m.intake))],
      ]),
    ].join('\n');
    const temp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
    await writeFile(temp, `${text}\n`, { mode: 0o644 });
    await rename(temp, path);
  } catch (err) {
    log.error({ event: 'metrics-not-written', path, reason: errorMessage(err) }, `could not write the metrics file ${path}`);
  }
}
