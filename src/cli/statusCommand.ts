import type { Command } from 'commander';
import { resolveSettings, type RawFlags } from '../config/settings.js';
import { errorMessage } from '../errors.js';
import { judgeStatus, STATUS_EXIT, statusFacts, statusJson, statusLine, type StatusFacts, type StatusLimits } from '../report/status.js';
import { jsonDocument } from './jsonOutput.js';
import { withResources } from './resources.js';
import { withSettingOptions } from './options.js';

interface StatusFlags extends RawFlags {
  json?: boolean;
}

/** Every failure to judge, from a bad flag to an unreadable ledger, is UNKNOWN (3): never a false CRITICAL or OK. */
function unknown(json: boolean | undefined, message: string): number {
  const state = 'UNKNOWN';
  const line = statusLine(state, message);
  const doc = { state: 'unknown', exit_status: STATUS_EXIT[state], message, line };
  process.stdout.write(`${json ? jsonDocument(doc) : line}\n`);
  return STATUS_EXIT[state];
}

async function check(flags: StatusFlags): Promise<number> {
  let limits: StatusLimits;
  let facts: StatusFacts;
  try {
    const s = resolveSettings(flags);
    limits = { maxAgeSeconds: s.maxAgeSeconds, maxWaitingRuns: s.maxWaitingRuns };
    facts = await withResources(s, async (r) => statusFacts(await r.ledger(), limits));
  } catch (err) {
    return unknown(flags.json, errorMessage(err));
  }
  const c = judgeStatus(facts, limits);
  process.stdout.write(`${flags.json ? jsonDocument(statusJson(c, limits)) : statusLine(c.state, c.message, c)}\n`);
  return STATUS_EXIT[c.state];
}

/**
 * `status`: "did last night work?" for Nagios, Icinga, a systemd unit or a cron wrapper.
 * It reads the ledger only, so it answers while the finance database or the intake is down.
 */
export function registerStatus(program: Command, setExit: (status: number) => void): void {
  const cmd = withSettingOptions(program.command('status'), 'status')
    .description('the monitoring check, on one line: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN')
    .option('--json', 'one JSON object')
    .action(async (flags: StatusFlags) => setExit(await check(flags)));
  // a mistyped flag is UNKNOWN on stdout, where the monitoring system looks
  cmd.showHelpAfterError(false).configureOutput({
    outputError: (text) => void unknown(process.argv.includes('--json'), text.trim().replace(/^error: /, '')),
  });
}
