import { readFile, rename, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { errorMessage } from '../errors.js';
import type { Intake } from '../intake/intake.js';
import type { Ledger } from '../ledger/ledger.js';
import type { RunCounts } from '../ledger/types.js';
import { filesWaitingNow, staleClaims } from './ledgerHealth.js';
import { COUNT_FIELDS } from './runCounts.js';

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

/** The summary line's counts of files (rows have their own gauge). */
const OUTCOMES = COUNT_FIELDS.filter(([, key]) => key !== 'rows');

/** The last success from the ledger; without a ledger, what the previous file said (never reset to 0 by an outage). */
async function lastSuccess(path: string, ledger: Ledger | undefined): Promise<number> {
  if (ledger) {
    const ok = await ledger.latestIngestRun({ successful: true });
    if (ok?.endedAt) return Date.parse(ok.endedAt) / 1000;
  }
  const previous = await readFile(path, 'utf8').catch(() => '');
  const m = new RegExp(`^${LAST_SUCCESS} (\\S+)$`, 'm').exec(previous);
  return m ? Number(m[1]) : 0;
}

/** The longest streak of runs that left one file waiting in the intake (held, not ready, failed). */
async function longestWait(ledger: Ledger | undefined): Promise<number> {
  if (!ledger) return 0;
  return Math.max(0, ...(await filesWaitingNow(ledger, 0)).map((w) => w.runs));
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
        ['', m.ledger ? (await staleClaims(m.ledger)).length : 0],
      ]),
      gauge('settle_ingest_longest_waiting_runs', 'Runs in a row that the longest-waiting file was left in the intake.', [
        ['', await longestWait(m.ledger)],
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
