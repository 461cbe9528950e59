import { access, constants, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { CLOCK_SHIFT_MS, CLOCK_SKEW_LIMIT_SECONDS, measureSkew, skewText, type ClockSkew } from '../clock.js';
import { errorMessage } from '../errors.js';
import { FinanceDb } from '../finance/financeDb.js';
import { assertPrivileges, runNeeds } from '../finance/financePrivileges.js';
import { assertLayoutFitsTable } from '../finance/layoutTable.js';
import { assertFinanceCurrent } from '../finance/migrateFinance.js';
import type { FolderReader } from '../intake/intake.js';
import { checkIntakeAccess, intakeFolders, openFinalFolder, openIntakeReader, type IntakeSettings } from '../intake/openIntake.js';
import type { Layout } from '../layout/model/layout.js';
import { isPostgresUrl, openLedger } from '../ledger/openLedger.js';

/** One thing tonight's run needs, and whether it holds; `partner` null for what all partners share. */
export interface DoctorCheck {
  partner: string | null;
  check: string;
  ok: boolean;
  /** `ok`, or why not and what to do */
  message: string;
}

/** What doctor reads of a partner's settings (config/settings.ts fills it). */
export interface DoctorSettings extends IntakeSettings {
  partner: string;
  ledger: string;
  ledgerTimeoutSeconds: number;
  databaseUrl: string | undefined;
  schema: string;
  dbTimeoutSeconds: number;
  layout: Layout;
}

export interface DoctorOptions {
  /** the ledger is to be read only (a monitoring user): opening it read-only is the check, not writing */
  readOnly: boolean;
  logger: Logger;
}

/**
 * Everything tonight's run needs, checked without changing anything: no folder is made, no
 * ledger created, nothing written to the finance database. The partners' shared things (the
 * ledger, the finance login, the clock) once, then each partner's intake, its final folders,
 * and its table's schema and privileges. Every check runs, whatever the one before found.
 */
export async function doctor(partners: DoctorSettings[], opts: DoctorOptions): Promise<DoctorCheck[]> {
  const shared = partners[0]!;
  const checks: DoctorCheck[] = [];
  const record = async (partner: string | null, check: string, probe: () => Promise<string | void>): Promise<boolean> => {
    try {
      const said = await probe();
      checks.push({ partner, check, ok: true, message: said ? `ok: ${said}` : 'ok' });
      return true;
    } catch (err) {
      checks.push({ partner, check, ok: false, message: errorMessage(err) });
      return false;
    }
  };

  await record(null, 'ledger', () => ledgerCheck(shared, opts.readOnly));

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
    if (loggedIn || isPostgresUrl(shared.ledger)) await record(null, 'clock', () => clockCheck(finance, shared));
    for (const doctorSettings of partners) {
      await intakeChecks(doctorSettings, opts.logger, record);
      if (!finance) continue;
      const db = finance.forLayout(doctorSettings.layout);
      await record(doctorSettings.partner, 'finance-schema', async () => {
        await assertFinanceCurrent(db);
        await assertLayoutFitsTable(db);
        return `schema ${doctorSettings.schema} current, table ${db.table} fits layout "${doctorSettings.layout.name}"`;
      });
      await record(doctorSettings.partner, 'finance-privileges', async () => {
        const needs = runNeeds(doctorSettings.layout.table);
        await assertPrivileges(db, needs);
        return Object.entries(needs)
          .map(([table, privileges]) => `${privileges.join(', ')} on ${table}`)
          .join('; ');
      });
    }
  } finally {
    await finance?.close();
  }
  return checks;
}

type Recorder = (partner: string | null, check: string, probe: () => Promise<string | void>) => Promise<boolean>;

/** The ledger opens at this release's version (never created: `migrate` does that), and can be written, or read as asked. */
async function ledgerCheck(s: DoctorSettings, readOnly: boolean): Promise<string> {
  const ledger = await openLedger(s.ledger, { create: false, readOnly, busyTimeoutMs: s.ledgerTimeoutSeconds * 1000 });
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
    throw new Error(`${what} is not writable by this user (${errorMessage(err)}): a run records every decision there`, { cause: err });
  });
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
    const ledger = await openLedger(settings.ledger, {
      create: false,
      readOnly: true,
      busyTimeoutMs: settings.ledgerTimeoutSeconds * 1000,
    });
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
 * The intake and its final folders with the rights a run needs: to list the intake and rename
 * out of it, and to rename into archive/, duplicates/ and rejected/ (or make them: the first
 * move does). On an SFTP server, the connection (reachable, host key known, login) first.
 */
async function intakeChecks(doctorSettings: DoctorSettings, logger: Logger, record: Recorder): Promise<void> {
  let folders: ReturnType<typeof intakeFolders> | undefined;
  try {
    folders = intakeFolders(doctorSettings);
  } catch (err) {
    await record(doctorSettings.partner, 'intake', () => Promise.reject(err));
    return;
  }
  const server = folders.server;
  if (!server) {
    await record(doctorSettings.partner, 'intake', () => localFolderCheck(folders.intake, 'intake', true));
    for (const to of ['archive', 'duplicates', 'rejected'] as const) {
      await record(doctorSettings.partner, to, () => localFolderCheck(folders[to], to, false));
    }
    return;
  }
  // what is known without the server: a key that opens, a known_hosts file to read or a well-formed pinned fingerprint
  if (!(await record(doctorSettings.partner, 'sftp-credentials', () => checkIntakeAccess(doctorSettings)))) return;
  let intake: FolderReader | null = null;
  const connected = await record(doctorSettings.partner, 'intake-server', async () => {
    intake = await openIntakeReader(doctorSettings, logger);
    return server.reachedNote;
  });
  if (!connected) return;
  await record(doctorSettings.partner, 'intake', async () => {
    try {
      const entries = await intake!.list();
      return `${folders.intake} listed (${entries.length} entries)`;
    } finally {
      await intake!.close();
    }
  });
  for (const to of ['archive', 'duplicates', 'rejected'] as const) {
    await record(doctorSettings.partner, to, async () => {
      const folder = await openFinalFolder(doctorSettings, to, logger, { missingAsNull: true });
      if (!folder) return `${folders[to]} is not there yet: the first move there makes it`;
      try {
        await folder.list();
        return `${folders[to]} present`;
      } finally {
        await folder.close();
      }
    });
  }
}

/**
 * A local folder a run lists or moves into: present with read, write and search rights (a
 * rename takes write on both folders); a final folder may be missing while the folder it goes
 * in lets the first move make it.
 */
async function localFolderCheck(folder: string, role: string, mustExist: boolean): Promise<string> {
  const found = await stat(folder).catch(() => null);
  if (found && !found.isDirectory()) throw new Error(`${role} ${folder} is not a folder`);
  if (!found) {
    if (mustExist) throw new Error(`${role} folder ${folder} does not exist: create it, or correct --intake`);
    let parent = dirname(folder);
    while (!(await stat(parent).catch(() => null)) && dirname(parent) !== parent) parent = dirname(parent);
    await access(parent, constants.W_OK | constants.X_OK).catch((err: unknown) => {
      throw new Error(`${role} ${folder} does not exist and cannot be made in ${parent} (${errorMessage(err)}): create it for this user`, {
        cause: err,
      });
    });
    return `${folder} is not there yet: the first move there makes it`;
  }
  await access(folder, constants.R_OK | constants.W_OK | constants.X_OK).catch((err: unknown) => {
    throw new Error(`${role} ${folder} lacks the rights a run needs (read, write, search: ${errorMessage(err)}): grant them to this user`, {
      cause: err,
    });
  });
  return `${folder} present, readable and writable`;
}
