import type { Command } from 'commander';
import { nowMs } from '../clock.js';
import { resolvePartners, type RawFlags } from '../config/settings.js';
import { UsageError } from '../errors.js';
import { waiveDay, type WaiveOutcome } from '../report/waiveDay.js';
import { printable } from '../report/printable.js';
import { jsonDocument } from './jsonOutput.js';
import { operatorName } from './operator.js';
import { withSettingOptions } from './options.js';
import { withResources } from './resources.js';

interface WaiveFlags extends RawFlags {
  day?: string;
  reason?: string;
  undo?: boolean;
  json?: boolean;
}

/** The line a person reads: the names and the reason are anyone's text, spelled out where they hold control or format characters. */
function waiveLine(o: WaiveOutcome): string {
  if (o.action === 'unwaived') {
    return printable(
      `${o.partner}: ${o.weekday} ${o.day} is owed again (waiver by ${o.tookBack!.operator} taken back by ${o.operator}: ${o.reason})`,
    );
  }
  // what came for the day all the same (a rejected file, fewer files than owed), said where it is decided
  const arrived =
    o.arrived.length > 0 ? `; its files that came did not deliver it: ${o.arrived.map((f) => `${f.name} (${f.outcome})`).join(', ')}` : '';
  return printable(
    `${o.partner}: ${o.weekday} ${o.day} waived by ${o.operator}: ${o.reason} (never overdue now${arrived}; --undo takes it back)`,
  );
}

export function registerWaive(program: Command): void {
  withSettingOptions(program.command('waive'), 'waive')
    .description(
      'waive an owed day that will never come (the partner confirmed there is none): it is never overdue; kept in the ledger with who and why',
    )
    .action(async (flags: WaiveFlags) => {
      if (flags.day === undefined) throw new UsageError('--day is required: the due day to waive, such as 2026-03-19');
      if (flags.reason === undefined) throw new UsageError(`--reason is required: why the day is ${flags.undo ? 'owed again' : 'waived'}`);
      const { partners, named, asked } = resolvePartners(flags);
      if (partners.length !== 1) {
        throw new UsageError(
          `waive takes one partner: choose it with --partner NAME (of ${partners.map((settings) => settings.partner).join(', ')})`,
        );
      }
      const partner = partners[0]!;
      if (named && !asked) {
        throw new UsageError(`waive takes one partner: choose it with --partner ${partner.partner}`);
      }
      const outcome = await withResources(partner, async (commandResources) =>
        waiveDay(await commandResources.ledger({ create: false }), {
          partner: partner.partner,
          expect: partner.expect,
          patternText: partner.patternText,
          day: flags.day!,
          reason: flags.reason!,
          operator: operatorName(),
          undo: flags.undo === true,
          now: nowMs(),
        }),
      );
      process.stdout.write(`${flags.json ? jsonDocument({ ...outcome }) : waiveLine(outcome)}\n`);
    });
}
