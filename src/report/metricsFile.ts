import { readFile } from 'node:fs/promises';
import type { Logger } from '../logEvents.js';
import { writeFileAtomically } from '../atomicFile.js';
import { errorMessage } from '../errors.js';
import type { Intake } from '../intake/intake.js';
import type { LedgerQueries } from '../ledger/ledger.js';
import { leaseRunOut } from '../ledger/staleClaim.js';
import { NO_COUNTS, type PartnerLease, type PartnerRunMetrics, type RunRow } from '../ledger/types.js';
import { filesWaitingNow, staleClaims } from './ledgerHealth.js';
import { COUNT_FIELDS, recordedCounts } from './runCounts.js';

export type { PartnerRunMetrics };

/** What a partner's deliveries say for the metrics (report/deliveries.ts). */
export interface DeliveryMetrics {
  /** when its latest file loaded (ms), null when none ever did */
  lastDeliveryAt: number | null;
  /** its latest load, or the due time of a later waived day (ms), null when neither: see deliveries.ts lastAccountedAt */
  lastAccountedAt: number | null;
  /** due days past `by` + `warnAfter` (warning) and past `by` + `errorAfter` (critical) without a delivery */
  overdue: { warning: number; critical: number };
}

export interface RunMetricsInput {
  /** every partner of the config file, in its order: one metrics file for all of them */
  partners: string[];
  /** the partners this process ran; the others keep what the ledger says of their last run */
  ran: PartnerRunMetrics[];
  /** absent when the ledger itself could not be opened */
  ledger?: LedgerQueries;
  /** --claim-lease: a lease (a claim's, a partner's) that runs further than this from the ledger's now holds nothing */
  claimLeaseSeconds: number;
  /** each partner's deliveries; absent when the ledger could not be opened */
  deliveries?: (partner: string) => Promise<DeliveryMetrics>;
  /** written by `watch`: its cycles so far, and when the last one ended */
  watch?: WatchMetrics;
}

/** The cycles of a `watch` process (pipeline/watchLoop.ts counts them). */
export interface WatchMetrics {
  idleCycles: number;
  workedCycles: number;
  failedCycles: number;
  /** ms since the epoch */
  lastCycleAt: number;
  /** each partner: its failed tries in a row (backed off while above 0), and whether its local folder is polled for want of inotify */
  partners: { partner: string; failures: number; polled: boolean }[];
}

/** One metric family: its type, its labels and its help, as Prometheus shows it and docs/MONITORING.md lists it. */
export interface MetricSpec {
  type: 'gauge' | 'counter';
  labels: readonly string[];
  help: string;
  /** `watch` alone writes it */
  watch?: true;
}

/**
 * Every metric the metrics file (and `watch --listen`'s /metrics) can hold, in the order it is
 * written: the renderer takes each family's type and help from here, docs/MONITORING.md's
 * "Metrics" table is generated from here (`node scripts/docs-monitoring.mjs` after a build), and
 * test/unit/monitoringDocs.test.ts holds the families rendered to the table and the table to the docs.
 */
export const METRICS = {
  settle_ingest_last_run_timestamp_seconds: { type: 'gauge', labels: ['partner'], help: 'When the last run ended (Unix time).' },
  settle_ingest_last_success_timestamp_seconds: {
    type: 'gauge',
    labels: ['partner'],
    help: 'When the last run whose loads ended with exit status 0 ended (Unix time).',
  },
  settle_ingest_last_run_files: { type: 'gauge', labels: ['partner', 'outcome'], help: 'Files of the last run per outcome.' },
  settle_ingest_last_run_rows: { type: 'gauge', labels: ['partner'], help: 'Rows loaded by the last run.' },
  settle_ingest_last_run_duration_seconds: { type: 'gauge', labels: ['partner'], help: 'How long the last run took.' },
  settle_ingest_last_run_exit_status: {
    type: 'gauge',
    labels: ['partner'],
    help: 'Exit status of the last run as the scheduler saw it (0 ok, 1 problem, also an overdue delivery past errorAfter, 2 configuration).',
  },
  settle_ingest_last_run_loads_exit_status: {
    type: 'gauge',
    labels: ['partner'],
    help: "Exit status of the last run's own loads, overdue deliveries aside (0 ok, 1 problem, 2 configuration).",
  },
  settle_ingest_stale_claims: {
    type: 'gauge',
    labels: ['partner'],
    help: 'Claims in the ledger whose owner is gone or whose lease has passed.',
  },
  settle_ingest_longest_waiting_runs: {
    type: 'gauge',
    labels: ['partner'],
    help: 'Runs in a row that the longest-waiting file was left in the intake.',
  },
  settle_ingest_oldest_waiting_file_age_seconds: {
    type: 'gauge',
    labels: ['partner'],
    help: 'Age of the oldest file still in the intake.',
  },
  settle_ingest_last_delivery_timestamp_seconds: {
    type: 'gauge',
    labels: ['partner'],
    help: 'When the latest file of the partner loaded (Unix time; 0: never).',
  },
  settle_ingest_last_accounted_timestamp_seconds: {
    type: 'gauge',
    labels: ['partner'],
    help: 'When the partner was last accounted for: its latest load, or the due time of a later day waived as never coming (Unix time; 0: neither).',
  },
  settle_ingest_overdue_deliveries: {
    type: 'gauge',
    labels: ['partner', 'level'],
    help: 'Due days without a delivery past by + warnAfter (level warning) and past by + errorAfter (level critical).',
  },
  settle_ingest_partner_lease_holder: {
    type: 'gauge',
    labels: ['partner', 'holder_host', 'holder_run'],
    help: "The run holding the partner's lease on a shared ledger when the file was written (1; absent when free).",
  },
  settle_ingest_partner_lease_until_timestamp_seconds: {
    type: 'gauge',
    labels: ['partner'],
    help: "When the partner's lease held by another run ends, by the ledger's clock (Unix time; 0: free).",
  },
  settle_ingest_starved_waiting_files: {
    type: 'gauge',
    labels: ['partner'],
    help: 'Files a run that skipped the partner, starved (its lease held, no success within --max-age), found waiting in its intake.',
  },
  settle_ingest_watch_last_cycle_timestamp_seconds: {
    type: 'gauge',
    labels: [],
    help: 'When the last cycle of watch ended (Unix time).',
    watch: true,
  },
  settle_ingest_watch_idle_cycles_total: {
    type: 'counter',
    labels: [],
    help: 'Cycles of watch that found no file to take and recorded no run.',
    watch: true,
  },
  settle_ingest_watch_worked_cycles_total: {
    type: 'counter',
    labels: [],
    help: 'Cycles of watch that took work, each partner worked recorded as a run.',
    watch: true,
  },
  settle_ingest_watch_failed_cycles_total: {
    type: 'counter',
    labels: [],
    help: 'Cycles of watch that failed (a database, ledger or server away) and were tried again after a backoff.',
    watch: true,
  },
  settle_ingest_watch_partner_failures: {
    type: 'gauge',
    labels: ['partner'],
    help: "The partner's failed tries in a row (its server, database or ledger away): backed off while above 0, 0 once it works.",
    watch: true,
  },
  settle_ingest_watch_folder_polled: {
    type: 'gauge',
    labels: ['partner'],
    help: "1 when the partner's local intake is polled at --stable-for pace because the kernel would not watch it (inotify instances or watches spent); 0 when its changes wake watch.",
    watch: true,
  },
  settle_ingest_watch_resident_memory_bytes: { type: 'gauge', labels: [], help: 'Resident memory of the watch process.', watch: true },
  settle_ingest_watch_heap_used_bytes: { type: 'gauge', labels: [], help: "The watch process's JavaScript heap in use.", watch: true },
} as const satisfies Record<string, MetricSpec>;

export type MetricName = keyof typeof METRICS;

const LAST_SUCCESS = 'settle_ingest_last_success_timestamp_seconds';
const LAST_DELIVERY = 'settle_ingest_last_delivery_timestamp_seconds';
const LAST_ACCOUNTED = 'settle_ingest_last_accounted_timestamp_seconds';

/** The summary line's counts of files (rows have their own gauge). */
const OUTCOMES = COUNT_FIELDS.filter(([, key]) => key !== 'rows');

/** Age of the oldest regular file still in the intake (0 when empty), undefined when it cannot be listed. */
export async function oldestWaiting(intake: Intake): Promise<number | undefined> {
  const files = await intake.list().catch(() => undefined);
  if (!files) return undefined;
  // a fold, not Math.min(...list): an intake of 200,000 files is more arguments than a call takes
  const oldest = files.reduce((min, f) => (f.notRegular ? min : Math.min(min, f.mtimeMs)), Infinity);
  return Number.isFinite(oldest) ? Math.max(0, (Date.now() - oldest) / 1000) : 0;
}

/** The samples of the text this one replaces: what a partner keeps when nothing newer is known. */
function previousSamples(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const m of text.matchAll(/^(settle_ingest_[a-z_]+(?:\{[^}]*\})?) (\S+)$/gm)) samples.set(m[1]!, Number(m[2]));
  return samples;
}

type Sample = [labels: string, value: number];

/** One family of the table, with its samples. */
function family(name: MetricName, samples: Sample[]): string {
  const { help, type } = METRICS[name];
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
  for (const [labels, value] of samples) lines.push(`${name}${labels} ${Number.isInteger(value) ? value : value.toFixed(3)}`);
  return lines.join('\n');
}

/** One partner's samples, from its run in this process, else its last run in the ledger, else the previous file. */
interface PartnerSamples {
  lastRun: number;
  lastSuccess: number;
  files: Record<string, number>;
  rows: number;
  duration: number;
  exitStatus: number;
  loadsExitStatus: number;
  staleClaims: number;
  longestWaiting: number;
  oldestWaiting: number;
  lastDelivery: number;
  lastAccounted: number;
  overdue: { warning: number; critical: number };
  /** another run's lease on the partner that holds by the ledger's clock, as the ledger says when the file is written */
  lease: PartnerLease | null;
}

const seconds = (iso: string | null | undefined) => (iso ? Date.parse(iso) / 1000 : null);

async function partnerSamples(runMetricsInput: RunMetricsInput, partner: string, previous: Map<string, number>): Promise<PartnerSamples> {
  const label = `{partner="${partner}"}`;
  const before = (name: string, labels = label) => previous.get(`settle_ingest_${name}${labels}`);
  const ran = runMetricsInput.ran.find((partnerRunMetrics) => partnerRunMetrics.partner === partner);
  const ledger = runMetricsInput.ledger?.forPartner(partner);
  const last: RunRow | undefined = ran || !ledger ? undefined : ((await ledger.recentRuns(1, [partner]))[0] ?? undefined);
  // the end of this process's own run as the ledger's clock wrote it, not this host's
  const ranEnd = ran?.runId && ledger ? seconds((await ledger.run(ran.runId))?.endedAt) : null;
  const counts = ran ? ran.counts : last ? recordedCounts(last) : NO_COUNTS;
  const success = ledger ? seconds((await ledger.latestIngestRun({ successful: true, partner }))?.endedAt) : null;
  const deliveries = runMetricsInput.deliveries ? await runMetricsInput.deliveries(partner) : undefined;
  return {
    lastRun: ran ? (ranEnd ?? ran.endedAt / 1000) : (seconds(last?.endedAt) ?? before('last_run_timestamp_seconds') ?? 0),
    // without a ledger, what the previous file said: an outage never resets it to 0
    lastSuccess: success ?? before('last_success_timestamp_seconds') ?? 0,
    files: Object.fromEntries(
      OUTCOMES.map(([outcome, key]) => [
        outcome,
        ran || last ? (counts[key] ?? 0) : (before('last_run_files', `{partner="${partner}",outcome="${outcome}"}`) ?? 0),
      ]),
    ),
    rows: ran || last ? (counts.rows ?? 0) : (before('last_run_rows') ?? 0),
    duration: ran
      ? (ran.endedAt - ran.startedAt) / 1000
      : last?.endedAt
        ? (Date.parse(last.endedAt) - Date.parse(last.startedAt)) / 1000
        : (before('last_run_duration_seconds') ?? 0),
    exitStatus: ran ? ran.processExitStatus : (last?.processExitStatus ?? last?.exitStatus ?? before('last_run_exit_status') ?? 0),
    loadsExitStatus: ran ? ran.exitStatus : (last?.exitStatus ?? before('last_run_loads_exit_status') ?? 0),
    staleClaims: ledger ? (await staleClaims(ledger, [partner], runMetricsInput.claimLeaseSeconds)).length : 0,
    longestWaiting: ledger ? (await filesWaitingNow(ledger, 0)).reduce((most, waitingFile) => Math.max(most, waitingFile.runs), 0) : 0,
    oldestWaiting: ran?.oldestWaitingSeconds ?? before('oldest_waiting_file_age_seconds') ?? 0,
    lastDelivery: deliveries ? (deliveries.lastDeliveryAt ?? 0) / 1000 : (before(LAST_DELIVERY.slice('settle_ingest_'.length)) ?? 0),
    lastAccounted: deliveries ? (deliveries.lastAccountedAt ?? 0) / 1000 : (before(LAST_ACCOUNTED.slice('settle_ingest_'.length)) ?? 0),
    overdue: deliveries?.overdue ?? {
      warning: before('overdue_deliveries', `{partner="${partner}",level="warning"}`) ?? 0,
      critical: before('overdue_deliveries', `{partner="${partner}",level="critical"}`) ?? 0,
    },
    lease: ledger ? await holdingLease(ledger, runMetricsInput.claimLeaseSeconds) : null,
  };
}

/** The partner's lease when it holds (another run works the partner, or a run that skipped it found it starved). */
async function holdingLease(ledger: LedgerQueries, claimLeaseSeconds: number): Promise<PartnerLease | null> {
  const lease = await ledger.partnerLease();
  if (!lease || leaseRunOut(lease.leaseUntil, { nowMs: lease.ledgerNowMs, leaseSeconds: claimLeaseSeconds }) !== null) return null;
  return lease;
}

/** A label's value as Prometheus's text format writes it: backslash, double quote and line break escaped. */
const labelValue = (text: string) => text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/**
 * Where the metrics go after a run: the text file for node_exporter's textfile collector, and
 * the text `watch --listen` serves on /metrics (the same text, rendered once).
 */
export interface MetricsTargets {
  file?: string | undefined;
  served?: ServedMetrics | undefined;
}

/** The metrics text an HTTP endpoint answers with: the latest rendered, replaced whole. */
export interface ServedMetrics {
  text: string | undefined;
}

/**
 * Every partner's last run as one Prometheus text, each series labelled with its `partner`,
 * after every run (also one that could not start): written to the metrics file, replaced
 * atomically (the collector never reads half a file), and handed to the HTTP endpoint. A
 * failure to render or write it is logged, never fatal to the run.
 */
export async function writeRunMetrics(targets: MetricsTargets, runMetricsInput: RunMetricsInput, log: Logger): Promise<void> {
  const path = targets.file;
  try {
    // what a partner keeps when nothing newer is known: the file outlives the process, the served text does not
    const before = path ? await readFile(path, 'utf8').catch(() => '') : (targets.served?.text ?? '');
    const text = await renderRunMetrics(runMetricsInput, before);
    if (targets.served) targets.served.text = text;
    // node_exporter reads it at any moment: whole or the previous one (and never through a link)
    if (path) await writeFileAtomically(path, text, { mode: 0o644, what: 'metrics file' });
  } catch (err) {
    log.error(
      { event: 'metrics-not-written', path, reason: errorMessage(err) },
      path ? `could not write the metrics file ${path}` : 'could not render the metrics',
    );
  }
}

/** The one renderer of the metrics: the text file and `/metrics` both are this text. */
export async function renderRunMetrics(runMetricsInput: RunMetricsInput, previousText: string): Promise<string> {
  const previous = previousSamples(previousText);
  const all: [string, PartnerSamples][] = [];
  for (const partner of runMetricsInput.partners) all.push([partner, await partnerSamples(runMetricsInput, partner, previous)]);
  const each = (value: (p: PartnerSamples) => number): Sample[] => all.map(([partner, p]) => [`{partner="${partner}"}`, value(p)]);
  const text = [
    family(
      'settle_ingest_last_run_timestamp_seconds',
      each((p) => Math.round(p.lastRun)),
    ),
    family(
      LAST_SUCCESS,
      each((p) => Math.round(p.lastSuccess)),
    ),
    family(
      'settle_ingest_last_run_files',
      all.flatMap(([partner, p]) =>
        OUTCOMES.map(([outcome]): Sample => [`{partner="${partner}",outcome="${outcome}"}`, p.files[outcome]!]),
      ),
    ),
    family(
      'settle_ingest_last_run_rows',
      each((p) => p.rows),
    ),
    family(
      'settle_ingest_last_run_duration_seconds',
      each((p) => p.duration),
    ),
    family(
      'settle_ingest_last_run_exit_status',
      each((p) => p.exitStatus),
    ),
    family(
      'settle_ingest_last_run_loads_exit_status',
      each((p) => p.loadsExitStatus),
    ),
    family(
      'settle_ingest_stale_claims',
      each((p) => p.staleClaims),
    ),
    family(
      'settle_ingest_longest_waiting_runs',
      each((p) => p.longestWaiting),
    ),
    family(
      'settle_ingest_oldest_waiting_file_age_seconds',
      each((p) => Math.round(p.oldestWaiting)),
    ),
    family(
      LAST_DELIVERY,
      each((p) => Math.round(p.lastDelivery)),
    ),
    family(
      LAST_ACCOUNTED,
      each((p) => Math.round(p.lastAccounted)),
    ),
    family(
      'settle_ingest_overdue_deliveries',
      all.flatMap(([partner, p]): Sample[] => [
        [`{partner="${partner}",level="warning"}`, p.overdue.warning],
        [`{partner="${partner}",level="critical"}`, p.overdue.critical],
      ]),
    ),
    // a partner whose lease another run holds is judged by its last success like any other: who holds it, and what waits
    family(
      'settle_ingest_partner_lease_holder',
      all.flatMap(([partner, p]): Sample[] =>
        p.lease
          ? [[`{partner="${partner}",holder_host="${labelValue(p.lease.host)}",holder_run="${labelValue(p.lease.runId ?? '')}"}`, 1]]
          : [],
      ),
    ),
    family(
      'settle_ingest_partner_lease_until_timestamp_seconds',
      each((p) => (p.lease ? Math.round(Date.parse(p.lease.leaseUntil) / 1000) : 0)),
    ),
    family(
      'settle_ingest_starved_waiting_files',
      each((p) => (p.lease?.skipped && 'count' in p.lease.skipped.waiting ? p.lease.skipped.waiting.count : 0)),
    ),
    ...(runMetricsInput.watch ? watchSamples(runMetricsInput.watch) : []),
  ].join('\n');
  return `${text}\n`;
}

/** `watch`'s own series: its cycles by kind since it started, and when the last one ended (a stalled loop stops moving it). */
function watchSamples(watch: WatchMetrics): string[] {
  const memory = process.memoryUsage();
  return [
    family('settle_ingest_watch_last_cycle_timestamp_seconds', [['', Math.round(watch.lastCycleAt / 1000)]]),
    family('settle_ingest_watch_idle_cycles_total', [['', watch.idleCycles]]),
    family('settle_ingest_watch_worked_cycles_total', [['', watch.workedCycles]]),
    family('settle_ingest_watch_failed_cycles_total', [['', watch.failedCycles]]),
    family(
      'settle_ingest_watch_partner_failures',
      watch.partners.map((p): Sample => [`{partner="${p.partner}"}`, p.failures]),
    ),
    family(
      'settle_ingest_watch_folder_polled',
      watch.partners.map((p): Sample => [`{partner="${p.partner}"}`, p.polled ? 1 : 0]),
    ),
    // a service runs for days: its memory must stay flat (docs/SCALING.md, the watch bench)
    family('settle_ingest_watch_resident_memory_bytes', [['', memory.rss]]),
    family('settle_ingest_watch_heap_used_bytes', [['', memory.heapUsed]]),
  ];
}
