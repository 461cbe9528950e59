import { formatDuration } from '../durations.js';
import type { LedgerQueries } from '../ledger/ledger.js';
import { leaseRunOut } from '../ledger/staleClaim.js';
import type { FileRow, PartnerLease, RunRow, WaitingInIntake } from '../ledger/types.js';
import type { WaitingFile } from '../ledger/waitingFiles.js';
import type { OverdueDelivery } from './deliveries.js';
import { filesWaitingNow, staleClaims } from './ledgerHealth.js';

/** The monitoring convention of Nagios, Icinga and their kin: the exit status is the state. */
export const STATUS_EXIT = { OK: 0, WARNING: 1, CRITICAL: 2, UNKNOWN: 3 } as const;
export type StatusState = keyof typeof STATUS_EXIT;

export interface StatusLimits {
  maxAgeSeconds: number;
  maxWaitingRuns: number;
  /** --claim-lease: a lease that runs further than this from the ledger's now holds nothing */
  claimLeaseSeconds: number;
}

/** What the check reads from the ledger for one partner, and nothing else. */
export interface StatusFacts {
  lastSuccess: RunRow | undefined;
  staleClaims: FileRow[];
  /** files that have waited in the intake more than the limit */
  waitingTooLong: WaitingFile[];
  /** due days without a delivery past `by` + `warnAfter` (report/deliveries.ts); empty without `expect` */
  overdue?: OverdueDelivery[];
  /** the moves that failed in the partner's latest run, when it ran after the last success: why it did not succeed */
  moveFailures?: { name: string; to: string; reason: string; runId: string }[];
  /** the partner's lease, when a run (of any host) holds it or left it behind: a shared ledger's alone */
  lease?: PartnerLease;
}

export interface StatusCheck extends StatusFacts {
  state: StatusState;
  /** the text after `SETTLE-INGEST STATE - `: what is wrong, worst first, or when the last success was */
  message: string;
  lastSuccessAgeSeconds: number | null;
  /** the problems behind the state, worst first */
  critical: string[];
  warning: string[];
}

/** One partner's facts, from its ledger view (its runs, its files, its lease), each judged by the ledger's clock. */
export async function statusFacts(ledger: LedgerQueries, limits: StatusLimits): Promise<StatusFacts> {
  const lastSuccess = await ledger.latestIngestRun({ successful: true, partner: ledger.partner });
  const lease = await ledger.partnerLease();
  return {
    lastSuccess,
    staleClaims: await staleClaims(ledger, [ledger.partner], limits.claimLeaseSeconds),
    waitingTooLong: await filesWaitingNow(ledger, limits.maxWaitingRuns),
    moveFailures: await latestMoveFailures(ledger, lastSuccess),
    ...(lease ? { lease } : {}),
  };
}

/** The moves that failed in the partner's latest finished run, when that run is not its last success. */
async function latestMoveFailures(ledger: LedgerQueries, lastSuccess: RunRow | undefined): Promise<StatusFacts['moveFailures']> {
  const latest = await ledger.latestIngestRun({ successful: false, partner: ledger.partner });
  if (!latest || latest.runId === lastSuccess?.runId || !latest.moveFailed) return [];
  return (await ledger.eventsOfRun(latest.runId))
    .filter((e) => e.event === 'move_failed')
    .map((e) => ({ name: e.name, to: String(e.details.to ?? ''), reason: String(e.details.reason ?? ''), runId: latest.runId }));
}

const listed = (names: string[], count: number) => `${names.join(', ')}${count > names.length ? ` and ${count - names.length} more` : ''}`;

/** What the runs that skipped a starved partner found in its intake, as status says it. */
function waitingText(waiting: WaitingInIntake): string {
  if ('error' in waiting) return `its intake could not be listed (${waiting.error})`;
  if (waiting.count === 0) return 'no file waiting in its intake';
  const since = waiting.oldestAt ? `, the oldest since ${waiting.oldestAt}` : '';
  return `${plural(waiting.count, 'file', 'files')} waiting in its intake (${listed(waiting.names, waiting.count)}${since})`;
}

/**
 * Whoever holds the lease of a partner that has gone without a successful run past --max-age:
 * the holder and its lease (or that the lease no longer holds, so the next run takes it over), and
 * the files a run that skipped the partner found waiting.
 */
export function leaseText(lease: PartnerLease, claimLeaseSeconds: number): string {
  const run = `run ${lease.runId ?? '(starting)'} on ${lease.host} (pid ${lease.pid})`;
  const runOut = leaseRunOut(lease.leaseUntil, { nowMs: lease.ledgerNowMs, leaseSeconds: claimLeaseSeconds });
  const held = runOut
    ? `its lease, taken by ${run} at ${lease.takenAt}, no longer holds (${runOut}): the next run takes the partner over`
    : `its lease is held by ${run}, taken at ${lease.takenAt}, until ${lease.leaseUntil}`;
  const seen = lease.skipped
    ? `; ${waitingText(lease.skipped.waiting)}, as ${lease.skipped.by} found skipping it at ${lease.skipped.at}`
    : '; no run has looked at its intake while it is held';
  return `${held}${seen}`;
}

/** `6s`, `45m`, `3h`, `30h`: how people say how long ago a nightly job last worked (never `0m` for seconds ago). */
export const ago = (seconds: number): string => formatDuration(seconds, { parts: 1 });

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

const lastText = (c: Pick<StatusCheck, 'lastSuccess' | 'lastSuccessAgeSeconds'>) =>
  c.lastSuccess ? `last success ${ago(c.lastSuccessAgeSeconds!)} ago (run ${c.lastSuccess.runId})` : 'no successful run recorded';

/**
 * One partner: CRITICAL when no run succeeded within the max age, a claim is stale (a run died
 * holding it: nothing of that content loads until a run settles it) or a due day's delivery is
 * past `errorAfter`; WARNING when a file has waited in the intake more runs than allowed or a
 * delivery is past `warnAfter`; OK otherwise.
 */
export function judgeStatus(facts: StatusFacts, limits: StatusLimits, now = Date.now()): StatusCheck {
  const last = facts.lastSuccess;
  const age = last?.endedAt ? Math.max(0, (now - Date.parse(last.endedAt)) / 1000) : null;
  const critical: string[] = [];
  // a run whose files were all decided and whose moves failed is not "no successful run": the moves are the reason;
  // starved: whoever holds its lease, the partner is judged by its last success, and the holder named
  const moves = facts.moveFailures ?? [];
  const movesText =
    moves.length > 0
      ? `${plural(moves.length, 'move', 'moves')} failed in run ${moves[0]!.runId}: ${moves.map((m) => `${m.name} to ${m.to}: ${m.reason}`).join(', ')}`
      : undefined;
  const holder = facts.lease ? `; ${leaseText(facts.lease, limits.claimLeaseSeconds)}` : '';
  if (age === null)
    critical.push(movesText ? `${movesText} (no run without a failure recorded)${holder}` : `no successful run recorded${holder}`);
  else if (age > limits.maxAgeSeconds) {
    critical.push(
      movesText
        ? `${movesText} (no run without a failure for ${ago(age)}, since run ${last!.runId})${holder}`
        : `no successful run for ${ago(age)} (run ${last!.runId})${holder}`,
    );
  }
  if (facts.staleClaims.length > 0) {
    const which = facts.staleClaims.map((fileRow) => `${fileRow.name} of run ${fileRow.runId}`).join(', ');
    critical.push(`${plural(facts.staleClaims.length, 'stale claim', 'stale claims')}: ${which}`);
  }
  const overdue = facts.overdue ?? [];
  for (const overdueDelivery of overdue) if (overdueDelivery.level === 'critical') critical.push(overdueDelivery.message);
  const warning = [
    ...overdue.filter((d) => d.level === 'warning').map((d) => d.message),
    ...facts.waitingTooLong.map((waitingFile) => `${waitingFile.name} waiting for ${waitingFile.runs} runs (${waitingFile.outcome})`),
  ];
  const state: StatusState = critical.length > 0 ? 'CRITICAL' : warning.length > 0 ? 'WARNING' : 'OK';
  const problems = [...critical, ...warning];
  const since = lastText({ lastSuccess: last, lastSuccessAgeSeconds: age });
  // a warning alone still says when the job last worked; a critical age already says it
  if (state === 'WARNING') problems.push(since);
  return { ...facts, state, message: state === 'OK' ? since : problems.join('; '), lastSuccessAgeSeconds: age, critical, warning };
}

const SEVERITY: Record<StatusState, number> = { CRITICAL: 0, UNKNOWN: 1, WARNING: 2, OK: 3 };

/**
 * Several partners, each judged on its own (one partner's success never hides another's
 * failure): the worst state, its problems first, each named by its partner, then the partners
 * that are fine with their last success. A single partner's check stays as it is.
 */
export function judgePartners(checks: { partner: string; check: StatusCheck }[]): StatusCheck & { partners: typeof checks; line: string } {
  const worst = [...checks].sort((a, b) => SEVERITY[a.check.state] - SEVERITY[b.check.state]);
  const state = worst[0]!.check.state;
  const partsOf = ({ partner, check }: (typeof checks)[number]): string[] => {
    if (check.state === 'OK') return [`${partner}: ${state === 'OK' ? '' : 'OK, '}${lastText(check)}`];
    const problems = [...check.critical, ...check.warning].map((p) => `${partner}: ${p}`);
    return check.state === 'WARNING' ? [...problems, `${partner}: ${lastText(check)}`] : problems;
  };
  const byPartner = worst.map(partsOf);
  const parts = byPartner.flat();
  // the oldest last success is the one the max age is about; a partner without any makes it unknown
  const ages = checks.map((c) => c.check.lastSuccessAgeSeconds);
  const oldest = ages.includes(null) ? null : (ages as number[]).reduce((most, age) => Math.max(most, age), -Infinity);
  const oldestCheck = checks.find((c) => c.check.lastSuccessAgeSeconds === oldest)?.check;
  return {
    state,
    message: parts.join('; '),
    line: lineOfMany(worst, byPartner),
    lastSuccess: oldest === null ? undefined : oldestCheck?.lastSuccess,
    lastSuccessAgeSeconds: oldest,
    staleClaims: checks.flatMap((c) => c.check.staleClaims),
    waitingTooLong: checks.flatMap((c) => c.check.waitingTooLong.map((waitingFile) => ({ ...waitingFile, partner: c.partner }))),
    moveFailures: checks.flatMap((c) => (c.check.moveFailures ?? []).map((failure) => ({ ...failure, partner: c.partner }))),
    ...(checks.some((c) => c.check.overdue !== undefined) ? { overdue: checks.flatMap((c) => c.check.overdue ?? []) } : {}),
    critical: checks.flatMap((c) => c.check.critical.map((p) => `${c.partner}: ${p}`)),
    warning: checks.flatMap((c) => c.check.warning.map((p) => `${c.partner}: ${p}`)),
    partners: checks,
  };
}

/** The partners whose every part the one line names; the others are counted by their state (lineOfMany). */
export const LINE_PARTNERS = 20;

/**
 * The message of the one line for many partners: the worst LINE_PARTNERS partners' parts, then
 * how many more partners there are in each state, where `message` (and `--json`) names them all.
 * A check's first line is read at a glance and kept short by the monitoring systems (Nagios cuts
 * a plugin's output at a few kB): 20,000 partners without a success made it 820 kB.
 */
function lineOfMany(worst: { check: StatusCheck }[], byPartner: string[][]): string {
  const named = byPartner.slice(0, LINE_PARTNERS).flat();
  const rest = worst.slice(LINE_PARTNERS);
  if (rest.length === 0) return named.join('; ');
  const counts = (Object.keys(SEVERITY) as StatusState[])
    .sort((a, b) => SEVERITY[a] - SEVERITY[b])
    .map((each) => [each, rest.filter((r) => r.check.state === each).length] as const)
    .filter(([, count]) => count > 0)
    .map(([each, count]) => `${count.toLocaleString('en-US')} ${each}`);
  return `${named.join('; ')}; and ${rest.length.toLocaleString('en-US')} more partners (${counts.join(', ')}): settle-ingest status --json names each`;
}

/**
 * The one line: `SETTLE-INGEST OK - last success 3h ago (run r-…) | perfdata`. A `|` would
 * start the performance data early, and a line break would end the line: neither may come
 * through from a file name.
 */
export function statusLine(state: StatusState, message: string, check?: StatusCheck): string {
  const perf = check
    ? ` | last_success_age=${check.lastSuccessAgeSeconds === null ? 'U' : `${Math.round(check.lastSuccessAgeSeconds)}s`}` +
      ` stale_claims=${check.staleClaims.length} files_waiting_too_long=${check.waitingTooLong.length}` +
      (check.overdue ? ` overdue_deliveries=${check.overdue.length}` : '')
    : '';
  return `SETTLE-INGEST ${state} - ${message.replace(/[\r\n|]+/g, ' ')}${perf}`;
}

function checkJson(statusCheck: StatusCheck, limits: StatusLimits): Record<string, unknown> {
  return {
    state: statusCheck.state.toLowerCase(),
    exitStatus: STATUS_EXIT[statusCheck.state],
    message: statusCheck.message,
    lastSuccess: statusCheck.lastSuccess
      ? {
          run: statusCheck.lastSuccess.runId,
          endedAt: statusCheck.lastSuccess.endedAt,
          ageSeconds: Math.round(statusCheck.lastSuccessAgeSeconds ?? 0),
        }
      : null,
    staleClaims: statusCheck.staleClaims.map((fileRow) => ({
      name: fileRow.name,
      sha256: fileRow.sha256,
      run: fileRow.runId,
      ownerHost: fileRow.ownerHost,
      ownerPid: fileRow.ownerPid,
      leaseUntil: fileRow.leaseUntil,
    })),
    waitingTooLong: statusCheck.waitingTooLong,
    moveFailures: statusCheck.moveFailures ?? [],
    lease: statusCheck.lease
      ? {
          host: statusCheck.lease.host,
          pid: statusCheck.lease.pid,
          run: statusCheck.lease.runId,
          takenAt: statusCheck.lease.takenAt,
          leaseUntil: statusCheck.lease.leaseUntil,
          holds:
            leaseRunOut(statusCheck.lease.leaseUntil, { nowMs: statusCheck.lease.ledgerNowMs, leaseSeconds: limits.claimLeaseSeconds }) ===
            null,
          skipped: statusCheck.lease.skipped,
        }
      : null,
    ...(statusCheck.overdue ? { overdueDeliveries: statusCheck.overdue.map(({ message, ...d }) => ({ ...d, message })) } : {}),
    maxAgeSeconds: limits.maxAgeSeconds,
    maxWaitingRuns: limits.maxWaitingRuns,
  };
}

/** `status --json`: the same verdict with what it rests on, and each partner's own. */
export function statusJson(
  statusCheck: StatusCheck,
  limits: StatusLimits,
  partners: { partner: string; check: StatusCheck; limits: StatusLimits }[] = [],
): Record<string, unknown> {
  const { state, exitStatus, message, ...rest } = checkJson(statusCheck, limits);
  return {
    state,
    exitStatus,
    message,
    line: statusLine(statusCheck.state, statusCheck.message, statusCheck),
    ...rest,
    partners: partners.map((p) => ({ partner: p.partner, ...checkJson(p.check, p.limits) })),
  };
}
