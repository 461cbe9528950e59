import type { Ledger } from '../ledger/ledger.js';
import type { FileRow, RunRow } from '../ledger/types.js';
import type { WaitingFile } from '../ledger/waitingFiles.js';
import { filesWaitingNow, staleClaims } from './ledgerHealth.js';

/** The monitoring convention of Nagios, Icinga and their kin: the exit status is the state. */
export const STATUS_EXIT = { OK: 0, WARNING: 1, CRITICAL: 2, UNKNOWN: 3 } as const;
export type StatusState = keyof typeof STATUS_EXIT;

export interface StatusLimits {
  maxAgeSeconds: number;
  maxWaitingRuns: number;
}

/** What the check reads from the ledger, and nothing else. */
export interface StatusFacts {
  lastSuccess: RunRow | undefined;
  staleClaims: FileRow[];
  /** files that have waited in the intake more than the limit */
  waitingTooLong: WaitingFile[];
}

export interface StatusCheck extends StatusFacts {
  state: StatusState;
  /** the text after `SETTLE-INGEST STATE - `: what is wrong, worst first, or when the last success was */
  message: string;
  lastSuccessAgeSeconds: number | null;
}

export async function statusFacts(ledger: Ledger, limits: StatusLimits): Promise<StatusFacts> {
  return {
    lastSuccess: await ledger.latestIngestRun({ successful: true }),
    staleClaims: await staleClaims(ledger),
    waitingTooLong: await filesWaitingNow(ledger, limits.maxWaitingRuns),
  };
}

/** `6s`, `45m`, `3h`, `30h`: how people say how long ago a nightly job last worked (never `0m` for seconds ago). */
export function ago(seconds: number): string {
  if (seconds < 59.5) return `${Math.round(seconds)}s`;
  return seconds < 3600 ? `${Math.floor(seconds / 60)}m` : `${Math.floor(seconds / 3600)}h`;
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * CRITICAL when no run succeeded within the max age or a claim is stale (a run died holding
 * it: nothing of that content loads until a run settles it); WARNING when a file has waited
 * in the intake more runs than allowed; OK otherwise.
 */
export function judgeStatus(facts: StatusFacts, limits: StatusLimits, now = Date.now()): StatusCheck {
  const last = facts.lastSuccess;
  const age = last?.endedAt ? Math.max(0, (now - Date.parse(last.endedAt)) / 1000) : null;
  const lastText = last ? `last success ${ago(age!)} ago (run ${last.runId})` : 'no successful run recorded';
  const critical: string[] = [];
  if (age === null) critical.push('no successful run recorded');
  else if (age > limits.maxAgeSeconds) critical.push(`no successful run for ${ago(age)} (run ${last!.runId})`);
  if (facts.staleClaims.length > 0) {
    const which = facts.staleClaims.map((c) => `${c.name} of run ${c.runId}`).join(', ');
    critical.push(`${plural(facts.staleClaims.length, 'stale claim', 'stale claims')}: ${which}`);
  }
  const warning = facts.waitingTooLong.map((w) => `${w.name} waiting for ${w.runs} runs (${w.outcome})`);
  const state: StatusState = critical.length > 0 ? 'CRITICAL' : warning.length > 0 ? 'WARNING' : 'OK';
  const problems = [...critical, ...warning];
  // a warning alone still says when the job last worked; a critical age already says it
  if (state === 'WARNING') problems.push(lastText);
  return { ...facts, state, message: state === 'OK' ? lastText : problems.join('; '), lastSuccessAgeSeconds: age };
}

/**
 * The one line: `SETTLE-INGEST OK - last success 3h ago (run r-…) | perfdata`. A `|` would
 * start the performance data early, and a line break would end the line: neither may come
 * through from a file name.
 */
export function statusLine(state: StatusState, message: string, check?: StatusCheck): string {
  const perf = check
    ? ` | last_success_age=${check.lastSuccessAgeSeconds === null ? 'U' : `${Math.round(check.lastSuccessAgeSeconds)}s`}` +
      ` stale_claims=${check.staleClaims.length} files_waiting_too_long=${check.waitingTooLong.length}`
    : '';
  return `SETTLE-INGEST ${state} - ${message.replace(/[\r\n|]+/g, ' ')}${perf}`;
}

/** `status --json`: the same verdict with what it rests on. */
export function statusJson(c: StatusCheck, limits: StatusLimits): Record<string, unknown> {
  return {
    state: c.state.toLowerCase(),
    exitStatus: STATUS_EXIT[c.state],
    message: c.message,
    line: statusLine(c.state, c.message, c),
    lastSuccess: c.lastSuccess
      ? { run: c.lastSuccess.runId, endedAt: c.lastSuccess.endedAt, ageSeconds: Math.round(c.lastSuccessAgeSeconds ?? 0) }
      : null,
    staleClaims: c.staleClaims.map((f) => ({
      name: f.name,
      sha256: f.sha256,
      run: f.runId,
      ownerHost: f.ownerHost,
      ownerPid: f.ownerPid,
      leaseUntil: f.leaseUntil,
    })),
    waitingTooLong: c.waitingTooLong,
    maxAgeSeconds: limits.maxAgeSeconds,
    maxWaitingRuns: limits.maxWaitingRuns,
  };
}
