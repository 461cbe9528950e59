import type { Command } from 'commander';
import pino from 'pino';
import { resolvePartners, type RawFlags } from '../config/settings.js';
import { EXIT_USAGE } from '../errors.js';
import { doctor, type DoctorCheck } from '../report/doctor.js';
import { jsonDocument } from './jsonOutput.js';
import { withSettingOptions } from './options.js';
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

export function registerDoctor(program: Command, setExit: (status: number) => void): void {
  withSettingOptions(program.command('doctor'), 'doctor')
    .description(
      "will tonight's run work? checks each partner's intake and folders, the ledger, the finance database and the clock, changing nothing; exit 2 when one fails",
    )
    .action(async (flags: DoctorFlags) => {
      const { partners } = resolvePartners(flags);
      // doctor writes nothing, not even a log file: what an SFTP session would log goes nowhere
      const checks = await doctor(partners, { readOnly: flags.readOnly === true, logger: pino({ level: 'silent' }) });
      process.stdout.write(`${flags.json ? jsonDocument({ ok: checks.every((c) => c.ok), checks }) : doctorText(checks)}\n`);
      if (checks.some((c) => !c.ok)) setExit(EXIT_USAGE);
    });
}
