import { execFileSync } from 'node:child_process';
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import pino from 'pino';
import { resolvePartners, type RawFlags } from '../config/settings.js';
import { EXIT_USAGE, errorMessage } from '../errors.js';
import { doctor, type DoctorCheck } from '../pipeline/doctor.js';
import { jsonDocument } from './jsonOutput.js';
import { loginOf } from './operator.js';
import { withSettingOptions } from './options.js';
import { withResources } from './resources.js';
import { partnerResources } from './runCommand.js';
import { textTable } from '../report/textTable.js';

interface DoctorFlags extends RawFlags {
  json?: boolean;
  readOnly?: boolean;
}

/** One line per check: who it is for, what it is, and `ok` or `FAILED: why and what to do`. */
export function doctorText(checks: DoctorCheck[]): string {
  return textTable(
    ['partner', 'check', 'result'],
    checks.map((c) => [c.partner ?? '(all)', c.check, c.ok ? c.message : `FAILED: ${c.message}`]),
  );
}

/**
 * Who doctor checks as: the service user the settings name. Started as root, it becomes that
 * user (its uid, gid, groups and home, so its ~/.pgpass and ~/.ssh) before any check, for root
 * passes every rights check a run as the service user fails; without a service user it cannot
 * tell, and says so. Started as another user than the one named, it says so too. `switched`:
 * the settings are to be read again, as that user.
 */
function becomeServiceUser(named: string | undefined): { check: DoctorCheck; switched: boolean; go: boolean } {
  // a container's uid may have no login (no /etc/passwd entry): `uid 10001`, never a crash
  const ownUid = process.getuid?.();
  const current = ownUid === undefined ? userInfo().username : loginOf(ownUid);
  const said = (ok: boolean, message: string, go = ok) => ({
    check: { partner: null, check: 'service-user', ok, message },
    switched: false,
    go,
  });
  if (process.getuid?.() !== 0) {
    if (named !== undefined && named !== current) {
      return said(
        false,
        `doctor runs as ${current}, the runs as ${named}: run it as ${named} (sudo -u ${named} settle-ingest doctor …) or as root`,
        true,
      );
    }
    return said(true, `ok: as ${current}, the user it runs as`);
  }
  if (named === undefined) {
    return said(
      false,
      'doctor runs as root, whose rights, groups and ~/.pgpass no run has: name the user the runs run as (--service-user, SETTLE_SERVICE_USER, "serviceUser") and doctor checks as it',
    );
  }
  if (named === 'root') return said(true, 'ok: as root, the user the runs run as');
  let entry: string;
  try {
    entry = execFileSync('getent', ['passwd', named], { encoding: 'utf8' }).trim();
  } catch {
    return said(
      false,
      `the service user ${named} does not exist on this host (getent passwd ${named}): correct --service-user, or create it`,
    );
  }
  const [, , uid, gid, , home] = entry.split(':');
  try {
    // the user's supplementary groups too: a ledger or transfer log readable by its group (adm) is so for the run
    (process as unknown as { initgroups(user: string, group: number): void }).initgroups(named, Number(gid));
    process.setgid!(Number(gid));
    process.setuid!(Number(uid));
  } catch (err) {
    return said(false, `cannot become the service user ${named}: ${errorMessage(err)}`);
  }
  Object.assign(process.env, { HOME: home, USER: named, LOGNAME: named });
  return { ...said(true, `ok: as ${named} (uid ${uid}), started as root`), switched: true };
}

export function registerDoctor(program: Command, setExit: (status: number) => void): void {
  withSettingOptions(program.command('doctor'), 'doctor')
    .description(
      "will tonight's run work? goes through a run's own preparation, then tries what a night does (the folders, staging, the ledger's and finance database's grants, the log files), changing nothing; exit 2 when one fails",
    )
    .action(async (flags: DoctorFlags) => {
      let { partners } = resolvePartners(flags);
      const as = becomeServiceUser(partners[0]!.serviceUser);
      // read again as the service user: its home's known_hosts, and a config it may not read is said
      if (as.switched) ({ partners } = resolvePartners(flags));
      // doctor writes nothing, not even a log file: what an SFTP session would log goes nowhere
      const logger = pino({ level: 'silent' });
      const checks = [
        as.check,
        ...(as.go
          ? await doctor(partners, {
              readOnly: flags.readOnly === true,
              logger,
              withPartner: (settings, work) => withResources(settings, (r) => work(partnerResources(r, settings)), { logger }),
            })
          : []),
      ];
      process.stdout.write(`${flags.json ? jsonDocument({ ok: checks.every((c) => c.ok), checks }) : doctorText(checks)}\n`);
      if (checks.some((c) => !c.ok)) setExit(EXIT_USAGE);
    });
}
