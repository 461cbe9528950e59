import type { LedgerQueries } from '../ledger/ledger.js';
import { OUTCOME_EVENTS, type LedgerEvent, type RunRow } from '../ledger/types.js';
import { commandOfRun } from '../ledger/runIds.js';
import { describeEvent } from './history.js';
import { countsText, recordedCounts } from './runCounts.js';
import { durationSeconds, manyPartners, runTimeText, statusText, utcTime } from './runsReport.js';
import { textTable } from './textTable.js';

/** What decides a file's fate in a run: its outcome, a stale claim settled, a reprocessing, a move that failed. */
const DECISIONS: readonly string[] = [...OUTCOME_EVENTS, 'recovered', 'expired', 'reprocessed', 'move_failed'];

export interface RunReport {
  run: RunRow;
  /** the run's decision events, in the order it made them, then the ignored names it saw again (recorded once, by an earlier run) */
  decisions: LedgerEvent[];
}

/**
 * `report run [RUN_ID]`: every file decision of the runs asked for, oldest first; empty when there
 * is none. Without an id, the latest command's runs: a `run` of several partners (or a cycle of
 * `watch`) records one run per partner, all named by the command's id (ledger/runIds.ts), and the
 * night's report is all of them. An id is that run; a command's id that is no run's own (a
 * config with "partners") is every partner's run of it.
 */
export async function runReports(ledger: LedgerQueries, runId?: string, partners?: string[]): Promise<RunReport[]> {
  const runs = await runsAsked(ledger, runId, partners);
  return Promise.all(runs.map((run) => decisionsOf(ledger, run)));
}

async function runsAsked(ledger: LedgerQueries, runId: string | undefined, partners: string[] | undefined): Promise<RunRow[]> {
  if (runId !== undefined) {
    const run = await ledger.run(runId);
    if (run) return partners && !partners.includes(run.partner) ? [] : [run];
    // a command's id: its partners' runs, as recorded by the one process that drew it first
    if (commandOfRun(runId) !== runId) return [];
    const named = await ledger.runsOfCommand(runId, partners);
    return named.filter((r) => r.host === named[0]!.host && r.pid === named[0]!.pid);
  }
  const [latest] = await ledger.recentRuns(1, partners);
  if (!latest) return [];
  const command = commandOfRun(latest.runId);
  if (command === null) return [latest];
  // the process that recorded the latest run: another that drew the same id (another host, the same minute) is not this command
  const runs = (await ledger.runsOfCommand(command, partners)).filter((r) => r.host === latest.host && r.pid === latest.pid);
  return runs.some((r) => r.runId === latest.runId) ? runs : [latest];
}

/** One run's decisions, in the order it made them, then the ignored names it saw again. */
async function decisionsOf(ledger: LedgerQueries, run: RunRow): Promise<RunReport> {
  const decisions = (await ledger.eventsOfRun(run.runId)).filter((e) => DECISIONS.includes(e.event));
  // an ignored name is recorded once: the run that saw it last lists it too, as the run's count has it
  const listed = new Set(decisions.filter((e) => e.event === 'ignored').map((e) => e.name));
  for (const ignoredEntry of await ledger.ignoredSeenBy(run.runId)) {
    if (listed.has(ignoredEntry.name)) continue;
    decisions.push({
      id: 0,
      partner: run.partner,
      runId: run.runId,
      at: ignoredEntry.at,
      event: 'ignored',
      name: ignoredEntry.name,
      sha256: null,
      details: { reason: ignoredEntry.reason },
    });
  }
  return { run, decisions };
}

const rowsOf = (e: LedgerEvent) => (typeof e.details.rows === 'number' ? e.details.rows : 0);

/** One decision for `--json`: the reason, or the original it duplicated, or the twin it waits for. */
export function decisionJson(ledgerEvent: LedgerEvent): Record<string, unknown> {
  const d = ledgerEvent.details;
  return {
    at: ledgerEvent.at,
    partner: ledgerEvent.partner,
    outcome: ledgerEvent.event,
    name: ledgerEvent.name,
    sha256: ledgerEvent.sha256,
    // the content inside a wrapped delivery (the file marker's hash); null when it could not be unwrapped
    contentSha256: 'contentSha256' in d ? d.contentSha256 : ledgerEvent.sha256,
    rows: rowsOf(ledgerEvent),
    reason: typeof d.reason === 'string' ? d.reason : null,
    duplicateOf: d.duplicateOf ?? null,
    heldFor: d.heldFor ?? null,
    ...(ledgerEvent.event === 'move_failed' ? { to: d.to ?? null, decidedBy: d.decidedBy ?? ledgerEvent.runId } : {}),
  };
}

/** `exit 1 (its loads: 0)` where the process exited otherwise than its loads ended (an overdue delivery); `exit 0` where they agree. */
function exitWords(run: RunRow): string {
  const loads = run.exitStatus ?? '-';
  if (run.processExitStatus === null || run.processExitStatus === run.exitStatus) return `exit ${loads}`;
  return `exit ${run.processExitStatus} (its loads: ${loads})`;
}

/** The runs of one command, one after another, a blank line between. */
export function formatRunReports(runReports: RunReport[]): string {
  return runReports.map(formatRunReport).join('\n\n');
}

function formatRunReport(runReport: RunReport): string {
  const run = runReport.run;
  const lines = [
    `run ${run.runId}: ${manyPartners([run]) ? `partner ${run.partner}, ` : ''}${run.mode} on ${run.host} (pid ${run.pid}), started ${utcTime(run.startedAt)} UTC, ` +
      `took ${runTimeText(durationSeconds(run))}, ${statusText(run)}, ${exitWords(run)}`,
    countsText(recordedCounts(run)),
  ];
  if (run.reason) lines.push(`reason: ${run.reason}`);
  lines.push('');
  if (runReport.decisions.length === 0) lines.push('no file decisions in this run');
  else {
    lines.push(
      textTable(
        ['outcome', 'file', 'rows', 'sha256', 'why'],
        runReport.decisions.map((ledgerEvent) => [
          ledgerEvent.event,
          ledgerEvent.name,
          rowsOf(ledgerEvent),
          ledgerEvent.sha256 ? `${ledgerEvent.sha256.slice(0, 12)}…` : '-',
          describeEvent(ledgerEvent, { rows: false }),
        ]),
      ),
    );
  }
  return lines.join('\n');
}
