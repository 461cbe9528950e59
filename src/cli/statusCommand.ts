import type { Command } from 'commander';
import { resolvePartners, type RawFlags, type Settings } from '../config/settings.js';
import { errorMessage } from '../errors.js';
import { DEFAULT_PARTNER } from '../ledger/types.js';
import { overdueDeliveries } from '../report/deliveries.js';
import {
  judgePartners,
  judgeStatus,
  STATUS_EXIT,
  statusFacts,
  statusJson,
  statusLine,
  type StatusCheck,
  type StatusLimits,
} from '../report/status.js';
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

interface Judged {
  partner: string;
  check: StatusCheck;
  limits: StatusLimits;
}

const limitsOf = (s: Settings): StatusLimits => ({
  maxAgeSeconds: s.maxAgeSeconds,
  maxWaitingRuns: s.maxWaitingRuns,
  claimLeaseSeconds: s.claimLeaseSeconds,
});

/**
 * Each partner judged on its own from the ledger, opened to read only: the config's partners
 * (or those --partner names); without "partners" in the config, every partner the ledger has
 * runs of (`default` alone, for a ledger of one partner).
 */
async function judgeAll(flags: StatusFlags): Promise<Judged[]> {
  const { partners, named, asked } = resolvePartners(flags, process.env, { unconfigured: 'allow' });
  return withResources(partners[0]!, async (commandResources) => {
    const ledger = await commandResources.ledger({ create: false, readOnly: true });
    let judged = partners;
    if (!named && !asked) {
      const seen = await ledger.partnersSeen();
      if (seen.length > 0) judged = seen.map((partner) => ({ ...partners[0]!, partner }));
    }
    // the ledger's clock judges what the ledger holds: a shared ledger's times are its server's, whatever this host's clock says
    const now = await ledger.ledgerNow();
    const out: Judged[] = [];
    for (const settings of judged) {
      const view = ledger.forPartner(settings.partner);
      const limits = limitsOf(settings);
      const facts = await statusFacts(view, limits);
      if (settings.expect)
        facts.overdue = await overdueDeliveries(
          view,
          { partner: settings.partner, expect: settings.expect, patternText: settings.patternText },
          now,
        );
      out.push({ partner: settings.partner, check: judgeStatus(facts, limits, now), limits });
    }
    return out;
  });
}

async function check(flags: StatusFlags): Promise<number> {
  let judged: Judged[];
  try {
    judged = await judgeAll(flags);
  } catch (err) {
    return unknown(flags.json, errorMessage(err));
  }
  // one partner, `default`: the line it always was; several: each named
  const single = judged.length === 1 && judged[0]!.partner === DEFAULT_PARTNER;
  const many = single ? undefined : judgePartners(judged);
  const c = many ?? judged[0]!.check;
  const doc = () => jsonDocument(statusJson(c, judged[0]!.limits, judged));
  // the one line names the worst partners and counts the rest; --json's message names every one
  process.stdout.write(`${flags.json ? doc() : statusLine(c.state, many?.line ?? c.message, c)}\n`);
  return STATUS_EXIT[c.state];
}

/**
 * `status`: "did last night work?" for Nagios, Icinga, a systemd unit or a cron wrapper, each
 * partner judged on its own, with the deliveries they owe. It only reads the ledger, so it
 * answers while the finance database or the intake is down, and as a user who may read nothing else.
 */
export function registerStatus(program: Command, setExit: (status: number) => void): void {
  const cmd = withSettingOptions(program.command('status'), 'status')
    .description('the monitoring check, on one line: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN')
    .action(async (flags: StatusFlags) => setExit(await check(flags)));
  // a mistyped flag is UNKNOWN on stdout, where the monitoring system looks
  cmd.showHelpAfterError(false).configureOutput({
    outputError: (text) => void unknown(process.argv.includes('--json'), text.trim().replace(/^error: /, '')),
  });
}
