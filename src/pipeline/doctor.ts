import { access, constants, open, statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../logEvents.js';
import { checkAppendOnly } from '../atomicFile.js';
import { CLOCK_SHIFT_MS, CLOCK_SKEW_LIMIT_SECONDS, measureSkew, skewText, type ClockSkew } from '../clock.js';
import { errorMessage } from '../errors.js';
import { FinanceDb } from '../finance/financeDb.js';
import { openIntakeReader } from '../intake/openIntake.js';
import type { Intake } from '../intake/intake.js';
import { loadsThroughStaging, type Layout } from '../layout/model/layout.js';
import { missingRunLedgerGrants } from '../ledger/ledgerRunPrivileges.js';
import { isPostgresUrl, openLedger } from '../ledger/openLedger.js';
import { expandLogFiles } from '../transferLog/logFiles.js';
import type { PartnerResources } from './partnerLoop.js';
import { assertStagingUsable, checkPartnerAccess, preparePartner, runFileChecks, type PreparationSettings } from './runPreparation.js';

/** One thing tonight's run needs, and whether it holds; `partner` null for what all partners share. */
export interface DoctorCheck {
  partner: string | null;
  check: string;
  ok: boolean;
  /** `ok`, or why not and what to do */
  message: string;
}

/** What doctor reads of a partner's settings (config/settings.ts fills it). */
export interface DoctorSettings extends PreparationSettings {
  ledger: string;
  ledgerTimeoutSeconds: number;
  databaseUrl: string | undefined;
  schema: string;
  dbTimeoutSeconds: number;
  layout: Layout;
  logFile: string | undefined;
  transferLog: { files: string[] };
}

/** What doctor needs from the command layer: the very resources a run opens, opened the same way (cli/resources.ts). */
export interface DoctorPorts<S extends DoctorSettings> {
  /** opens the partner's resources for `work` as a run's partner loop does, and closes them after it */
  withPartner<T>(settings: S, work: (resources: PartnerResources) => Promise<T>): Promise<T>;
  /** the ledger is to be read only (a monitoring user): opening it read-only is the check, not writing */
  readOnly: boolean;
  logger: Logger;
}

type Recorder = (partner: string | null, check: string, probe: () => Promise<string | void>) => Promise<boolean>;

/**
 * Will tonight's run work? doctor goes through the run's own preparation (pipeline/runPreparation.ts:
 * every partner's settings and keys, its intake's access, its staging) and opens each partner's
 * ledger, finance database and intake through the same resources a run opens (PartnerResources),
 * changing nothing; then tries what only a night shows, undone at once: writing in the intake and
 * archive/, making a missing duplicates/ or rejected/, room for staging, the ledger's grants for a
 * run's writes, transactions that may write, the log, metrics and summary files, the transfer log.
 * Every check runs, whatever the one before found; each failure names its fix.
 */
export async function doctor<S extends DoctorSettings>(partners: S[], ports: DoctorPorts<S>): Promise<DoctorCheck[]> {
  const shared = partners[0]!;
  const checks: DoctorCheck[] = [];
  const record: Recorder = async (partner, check, probe) => {
    try {
      const said = await probe();
      checks.push({ partner, check, ok: true, message: said ? `ok: ${said}` : 'ok' });
      return true;
    } catch (err) {
      checks.push({ partner, check, ok: false, message: errorMessage(err) });
      return false;
    }
  };

  await record(null, 'ledger', () => ledgerCheck(shared, ports.readOnly));
  if (!ports.readOnly && isPostgresUrl(shared.ledger)) await record(null, 'ledger-privileges', () => ledgerPrivileges(shared.ledger));
  await fileChecks(shared, record);

  let finance: FinanceDb | undefined;
  const loggedIn = await record(null, 'finance-login', async () => {
    finance = await FinanceDb.connect(shared.databaseUrl, shared.schema, shared.layout, {
      timeoutSeconds: shared.dbTimeoutSeconds,
      onLost: () => undefined,
    });
    const queryResult = await finance.client.query<{ role: string }>('SELECT current_user AS role');
    return `as role "${queryResult.rows[0]!.role}"`;
  });
  try {
    if (loggedIn) await record(null, 'finance-writable', () => writableTransactions(finance!));
    if (loggedIn || isPostgresUrl(shared.ledger)) await record(null, 'clock', () => clockCheck(finance, shared));
  } finally {
    await finance?.close();
  }
  for (const settings of partners) await partnerChecks(settings, ports, record);
  return checks;
}

/** The ledger opens at this release's version (never created: `migrate` does that), and can be written, or read as asked. */
async function ledgerCheck(s: DoctorSettings, readOnly: boolean): Promise<string> {
  const ledger = await openLedger(s.ledger, { create: false, readOnly, timeoutMs: s.ledgerTimeoutSeconds * 1000 });
  await ledger.close();
  if (readOnly) return "opens read-only at this release's version";
  if (!isPostgresUrl(s.ledger)) {
    // SQLite writes the file and, in WAL mode, its -wal and -shm files beside it
    await writable(s.ledger, `ledger ${s.ledger}`);
    await writable(dirname(s.ledger), `the ledger's folder ${dirname(s.ledger)}`);
  }
  return "opens at this release's version, writable";
}

async function writable(path: string, what: string): Promise<void> {
  await access(path, constants.W_OK).catch((err: unknown) => {
    throw new Error(
      `${what} is not writable by this user (${errorMessage(err)}): a run records every decision there; chown it to the service user`,
      {
        cause: err,
      },
    );
  });
}

/** A PostgreSQL ledger's role may do what a run writes there: each missing grant, as the statement that gives it. */
async function ledgerPrivileges(url: string): Promise<string> {
  const { role, grants } = await missingRunLedgerGrants(url);
  if (grants.length > 0) {
    throw new Error(
      `ledger role "${role}" cannot do what a run writes; as the ledger schema's owner: ${grants.join('; ')} (see docs/OPERATING.md, "Database roles")`,
    );
  }
  return `role "${role}" may write runs, files, events, moves and leases, and use the schema's sequences`;
}

/** The log file checked as a run opens it, the metrics and summary files as the run's preparation checks them; nothing made. */
async function fileChecks(s: DoctorSettings, record: Recorder): Promise<void> {
  if (s.logFile) await record(null, 'log-file', async () => checkAppendOnly(s.logFile!, 'log file'));
  for (const { check, probe } of runFileChecks(s)) await record(null, check, probe);
}

/** A role (or a server: a replica) whose transactions are read-only loads nothing: the run would fail at its first COPY. */
async function writableTransactions(db: FinanceDb): Promise<string> {
  const r = await db.client.query<{ role: string; readonly: string; recovery: boolean }>(
    "SELECT current_user AS role, current_setting('default_transaction_read_only') AS readonly, pg_is_in_recovery() AS recovery",
  );
  const { role, readonly, recovery } = r.rows[0]!;
  if (recovery)
    throw new Error('the finance database is a standby (in recovery): every load would fail; point --database-url at the primary');
  if (readonly === 'on') {
    throw new Error(
      `role "${role}"'s transactions are read-only (default_transaction_read_only = on): every load would fail; ALTER ROLE "${role}" SET default_transaction_read_only = off (or for the database: ALTER DATABASE … SET default_transaction_read_only = off)`,
    );
  }
  return `role "${role}" may write`;
}

/**
 * This host's clock against the servers' (the finance database's; a shared ledger's, whose clock
 * writes every time several hosts compare): past CLOCK_SKEW_LIMIT_SECONDS, every run says so and
 * takes over no other host's lease or claim, so doctor fails it too.
 */
async function clockCheck(finance: FinanceDb | undefined, settings: DoctorSettings): Promise<string> {
  const readings: { server: string; skew: ClockSkew }[] = [];
  if (finance) {
    const skew = await measureSkew(async () => {
      const r = await finance.client.query<{ ms: string }>('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS ms');
      return Number(r.rows[0]!.ms) + CLOCK_SHIFT_MS;
    });
    readings.push({ server: "the database server's", skew });
  }
  if (isPostgresUrl(settings.ledger)) {
    const ledger = await openLedger(settings.ledger, { create: false, readOnly: true, timeoutMs: settings.ledgerTimeoutSeconds * 1000 });
    try {
      readings.push({ server: "the ledger server's", skew: await measureSkew(() => ledger.ledgerNow()) });
    } finally {
      await ledger.close();
    }
  }
  const shown = readings.map((r) => skewText(r.skew, r.server)).join(', ');
  if (readings.some((r) => r.skew.skewed)) {
    throw new Error(
      `this host's clock is ${shown}, more than ${CLOCK_SKEW_LIMIT_SECONDS} s: synchronise both with NTP (timedatectl, chronyc tracking); ` +
        "until then every run says so and takes over no other host's lease or claim",
    );
  }
  return shown;
}

/**
 * One partner, as its run prepares and opens it: its settings and keys, what its intake and
 * staging need, then its finance database and intake opened through the run's own resources;
 * then a night rehearsed in each folder, the room for staging, and the transfer log.
 */
async function partnerChecks<S extends DoctorSettings>(settings: S, ports: DoctorPorts<S>, record: Recorder): Promise<void> {
  const partner = settings.partner;
  let prepared: Awaited<ReturnType<typeof preparePartner<S>>> | undefined;
  await record(partner, 'settings', async () => {
    prepared = await preparePartner(settings);
    return settings.decode.pgpKeyPath ? `pattern and keys read (${settings.decode.pgpKeyPath} unlocked)` : 'pattern read';
  });
  if (!prepared) return;
  // what the run refuses before its first partner runs (the intake's access, the staging folder), as it refuses it
  const refusal = await checkPartnerAccess(prepared).catch((err: unknown) => err);
  await record(partner, 'access', async () => {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the refusal as the run would throw it
    if (refusal !== undefined) throw refusal;
  });
  const stop = new AbortController().signal;
  await ports.withPartner(settings, async (resources) => {
    await record(partner, 'finance', async () => {
      const db = await resources.finance(stop);
      const staging = loadsThroughStaging(settings.layout) ? ', TEMPORARY for its staging table held' : '';
      return `schema ${settings.schema} current, table ${db.table} fits layout "${settings.layout.name}", privileges for a load held${staging}`;
    });
    let intake: Intake | undefined;
    const opened = await record(partner, 'intake', async () => {
      intake = await resources.intake(stop);
      return await intake.rehearse('intake');
    });
    let largest = 0;
    if (opened) {
      for (const to of ['archive', 'duplicates', 'rejected'] as const) await record(partner, to, () => intake!.rehearse(to));
      // listed as a reader lists it: a run's intake puts back what a killed run captured when it lists
      await record(partner, 'intake-listing', async () => {
        const reader = await openIntakeReader(settings, ports.logger);
        try {
          const entries = (await reader?.list()) ?? [];
          largest = Math.max(0, ...entries.map((e) => e.size));
          return `${entries.length} entries, the largest ${largest} bytes`;
        } finally {
          await reader?.close();
        }
      });
    }
    await record(partner, 'staging', () => stagingCheck(settings.staging, largest));
  });
  if (settings.transferLog.files.length > 0) await record(partner, 'transfer-log', () => transferLogCheck(settings.transferLog.files));
}

/** How much free room staging needs beyond the largest file waiting: a run's own folder, a decoded copy's slack. */
const STAGING_SLACK_BYTES = 16 * 1024 * 1024;

/** The staging folder as a run asks it, and room on its file system for the largest file waiting in the intake. */
async function stagingCheck(dir: string, largest: number): Promise<string> {
  await assertStagingUsable(dir);
  const fs = await statfs(dir);
  const free = fs.bavail * fs.bsize;
  const needs = largest + STAGING_SLACK_BYTES;
  if (free < needs) {
    throw new Error(
      `staging folder ${dir} has ${free} bytes free, fewer than the ${needs} a run needs to stage the largest file waiting (${largest} bytes): free room there, or set --staging to a larger file system`,
    );
  }
  return `${dir} writable, ${free} bytes free`;
}

/** Each transfer log file the run's gate reads (a wildcard's every match), opened for reading as the gate opens it. */
async function transferLogCheck(patterns: string[]): Promise<string> {
  const files = await expandLogFiles(patterns);
  for (const file of files) {
    const handle = await open(file, 'r').catch((err: unknown) => {
      throw new Error(
        `transfer log ${file} cannot be read by this user (${errorMessage(err)}): a run would judge every file without it; add the service user to the log's group (e.g. adm), or chmod g+r ${file}`,
        { cause: err },
      );
    });
    await handle.close();
  }
  return `${files.length} file${files.length === 1 ? '' : 's'} readable`;
}
