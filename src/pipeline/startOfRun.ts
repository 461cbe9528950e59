import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { FinanceDb } from '../finance/financeDb.js';
import type { Logger } from '../logEvents.js';
import { errorMessage } from '../errors.js';
import type { RunLedger } from '../ledger/ledger.js';
import { currentOwner, ownerIsGone, type ClaimOwner } from '../owner.js';
import { runEndedHere, settleIfStale, type ClaimJudging } from './staleClaims.js';

const STAGING_PREFIX = 'settle-';
/**
 * A staging folder's name: the prefix, a run id (ledger/runIds.ts) and mkdtemp's suffix. A shared temp
 * folder holds many other `settle-*` entries; only these are worth opening at the start of a run.
 */
const STAGING_NAME = /^settle-r-\d{8}-\d{4}-[0-9a-f]{4}-/;
const OWNER_FILE = 'owner.json';

/**
 * Runs that ended without a word (killed, host rebooted) are closed as `died` by the next run
 * on their host, so `report runs` never shows them running forever. Another host's run cannot
 * be judged from here and stays open until a run on its own host looks.
 */
export async function closeDeadRuns(ledger: RunLedger, runId: string, log: Logger): Promise<void> {
  for (const run of await ledger.openRuns()) {
    if (run.runId === runId) continue;
    // a run of this very process (watch's earlier cycle) that ended while its ledger was away could not record its end
    const why = runEndedHere(run.runId)
      ? `it ended in this very process (pid ${run.pid} on ${run.host}) when its end could not be recorded`
      : ownerIsGone({ host: run.host, pid: run.pid, startedAt: 'unknown' })
        ? `its process (pid ${run.pid} on ${run.host}) ended without closing the run`
        : null;
    if (why === null) continue;
    await closeAsDied(ledger, { runId: run.runId, startedAt: run.startedAt }, runId, why, log);
  }
}

/** Closes a dead run as `died` with why, once: the one record and log line of every way a dead run is found. */
export async function closeAsDied(
  ledger: RunLedger,
  dead: { runId: string; startedAt?: string },
  foundBy: string,
  reason: string,
  log: Logger,
): Promise<void> {
  if (await ledger.closeDeadRun(dead.runId, foundBy, reason)) {
    log.warn({ event: 'run-died', deadRun: dead.runId, started: dead.startedAt }, `run ${dead.runId} died: ${reason}`);
  }
}

/**
 * Every stale claim in the ledger is settled at the start of a run, whether or not its
 * content is in the intake again: a run that died after its COMMIT must not stay `claimed`
 * forever. Live claims (another run at work) are left alone.
 */
export async function settleStaleClaims(
  ledger: RunLedger,
  finance: FinanceDb,
  runId: string,
  judging: ClaimJudging,
  log: Logger,
): Promise<void> {
  const claims = await ledger.filesInState('claimed');
  if (claims.length === 0) return;
  const nowMs = await ledger.ledgerNow();
  for (const claim of claims) {
    await settleIfStale(ledger, finance, claim, runId, judging, log.child({ file: claim.name, sha256: claim.sha256 }), nowMs);
  }
}

/**
 * This run's private staging folder, with its owner written inside so that a later run can
 * tell a dead run's leftovers (removed) from a live run's folder (kept).
 */
export async function makeStagingDir(stagingRoot: string, runId: string): Promise<string> {
  const dir = await mkdtemp(join(stagingRoot, `${STAGING_PREFIX}${runId}-`));
  await writeFile(join(dir, OWNER_FILE), JSON.stringify(currentOwner()), { mode: 0o600 });
  return dir;
}

/** Removes the staging folders of runs on this host whose process is gone: a killed run's copies never pile up. */
export async function removeDeadStaging(stagingRoot: string, ownDir: string, log: Logger): Promise<void> {
  const entries = await readdir(stagingRoot, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    if (!e.isDirectory() || !STAGING_NAME.test(e.name)) continue;
    const dir = join(stagingRoot, e.name);
    if (dir === ownDir) continue;
    const owner = await readFile(join(dir, OWNER_FILE), 'utf8')
      .then((t) => JSON.parse(t) as ClaimOwner)
      .catch(() => null);
    // a folder without a readable owner may be a run still writing it: left alone
    if (!owner || owner.host !== hostname() || !ownerIsGone(owner)) continue;
    await rm(dir, { recursive: true, force: true }).then(
      () => log.info({ event: 'staging-removed', dir }, `removed the staging folder of a dead run: ${dir}`),
      (err) => log.warn({ event: 'staging-not-removed', dir, reason: errorMessage(err) }, `could not remove ${dir}`),
    );
  }
}
