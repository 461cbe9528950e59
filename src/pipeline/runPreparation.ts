import { access, constants, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { checkAppendOnly, checkAtomicWrite } from '../atomicFile.js';
import { EXIT_USAGE, UsageError, errorMessage, exitStatusOf } from '../errors.js';
import { loadDecodeOptions, type DecodeOptions, type DecodeSettings } from '../delivery/decodeSettings.js';
import { globToRegExp } from '../intake/names.js';
import { checkIntakeAccess, checkIntakeSetting, type IntakeSettings } from '../intake/openIntake.js';

/**
 * A run's preparation, before its first partner runs, and `doctor`'s, which goes through the
 * same steps: every partner's settings read (pattern, keys unlocked), and what its intake and
 * staging need checked, and the metrics and summary files it writes at its end. What a run
 * refuses here is exit 2 with nothing touched; `doctor` says it as a failed check. (Opening the ledger, finance database and intake is the partner loop's,
 * through the same resources for both: partnerLoop.ts' PartnerResources.)
 */

/** What preparing a partner reads of its settings (config/settings.ts fills it). */
export interface PreparationSettings extends IntakeSettings {
  partner: string;
  pattern: string;
  ignore: string[];
  staging: string;
  decode: DecodeSettings;
  metricsFile: string | undefined;
  summaryFile: string | undefined;
}

/** What a partner's run needs that is read from its settings alone: refused (exit 2) before any partner's run is recorded. */
export interface Prepared<S> {
  settings: S;
  pattern: RegExp;
  ignore: RegExp[];
  decode: DecodeOptions;
  /** why the partner cannot run, found before any partner ran (checkPartnerAccess): its run is recorded as not started */
  refusal?: unknown;
}

/** One partner's settings read as its run reads them: the intake setting, the pattern and ignore globs, the keys unlocked. */
export async function preparePartner<S extends PreparationSettings>(settings: S): Promise<Prepared<S>> {
  checkIntakeSetting(settings);
  // a pattern that cannot compile is refused before a run is recorded
  const pattern = globToRegExp(settings.pattern);
  const ignore = settings.ignore.map(globToRegExp);
  // keys are read and unlocked before a run is recorded: a wrong passphrase touches nothing (exit 2)
  const decode = await loadDecodeOptions(settings.decode, pattern);
  return { settings, pattern, ignore, decode };
}

/**
 * What opening the partner's intake and staging needs that is known without a connection (its
 * folders, SFTP credentials and host key settings, the staging folder): the refusal, or
 * undefined when all hold.
 */
export async function checkPartnerAccess(prepared: Prepared<PreparationSettings>): Promise<unknown> {
  try {
    await checkIntakeAccess(prepared.settings);
    await assertStagingUsable(prepared.settings.staging);
    return undefined;
  } catch (err) {
    if (exitStatusOf(err) !== EXIT_USAGE) throw err;
    return err;
  }
}

/** One line for the refusals found before any partner ran: the only one's own message, or each partner's named. */
export function refusalError(refused: Prepared<PreparationSettings>[], all: Prepared<PreparationSettings>[]): unknown {
  if (all.length === 1) return refused[0]!.refusal;
  const each = refused.map((p) => `partner "${p.settings.partner}": ${errorMessage(p.refusal)}`).join('; ');
  return new UsageError(`${each} (no partner was run: every partner's settings are checked before the first runs)`, {
    cause: refused[0]!.refusal,
  });
}

/** One of the files a run writes at its end, for all partners: doctor's check's name, and the check itself. */
export interface RunFileCheck {
  check: 'metrics-file' | 'summary-file';
  probe: () => Promise<string>;
}

/**
 * The metrics and summary files (shared: the first partner's settings name them), each checked as
 * the run writes it (atomicFile.ts: the metrics file replaced whole, the summary appended to),
 * nothing made. A run only writes them after its last partner, so one it could not write would
 * load everything and then say nothing: the run refuses it at its start, doctor fails it.
 */
export function runFileChecks(shared: PreparationSettings): RunFileCheck[] {
  const checks: RunFileCheck[] = [];
  const { metricsFile, summaryFile } = shared;
  if (metricsFile) {
    checks.push({
      check: 'metrics-file',
      probe: () => optionNamed(() => checkAtomicWrite(metricsFile, 'metrics file'), '--metrics-file, SETTLE_METRICS_FILE'),
    });
  }
  if (summaryFile) {
    checks.push({
      check: 'summary-file',
      probe: () => optionNamed(async () => checkAppendOnly(summaryFile, 'summary file'), '--summary-file, SETTLE_SUMMARY_FILE'),
    });
  }
  return checks;
}

/** A refusal of a file the user named, with where it was named, as the log file's says it (cli/logger.ts). */
async function optionNamed(probe: () => Promise<string>, option: string): Promise<string> {
  try {
    return await probe();
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    throw new UsageError(`${err.message} (${option})`, { cause: err.cause ?? err });
  }
}

/** Every partner's settings read, what its intake and staging need and the run's own files checked, before any runs: the refused ones apart. */
export async function preparePartners<S extends PreparationSettings>(
  partners: S[],
): Promise<{ prepared: Prepared<S>[]; refused: Prepared<S>[] }> {
  // the metrics and summary files are every partner's: one that cannot be written runs none (exit 2, nothing recorded)
  if (partners[0]) for (const { probe } of runFileChecks(partners[0])) await probe();
  const prepared: Prepared<S>[] = [];
  for (const p of partners) prepared.push(await preparePartner(p));
  for (const p of prepared) p.refusal = await checkPartnerAccess(p);
  return { prepared, refused: prepared.filter((p) => p.refusal !== undefined) };
}

/**
 * The staging folder a run makes its own folder in: there, a folder, and writable and
 * searchable by this user. Anything else is configuration (exit 2), said before any run work.
 */
export async function assertStagingUsable(dir: string): Promise<void> {
  const st = await stat(dir).catch(() => null);
  if (!st?.isDirectory()) throw new UsageError(`staging folder ${dir} does not exist or is not a folder (--staging, SETTLE_STAGING)`);
  await access(dir, constants.W_OK | constants.X_OK).catch((err: unknown) => {
    const user = userInfo().username;
    throw new UsageError(
      `staging folder ${dir} is not writable by the user ${user} (${errorMessage(err)}): chown ${user} ${dir}, or set --staging to a folder of its own`,
      { cause: err },
    );
  });
}
