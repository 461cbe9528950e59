// A config file of N partners as the scale of issue 44 has them: each its own intake, the default
// layout extended to name its table, the deliveries it owes; the top of the file the ledger and
// one shared setting. test/unit/configScale.test.ts and bench/scaling/configRead.mjs read it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Partner i's intake, relative to the config file's folder. */
export const intakeOf = (i) => `partners/p${i}/intake`;

/**
 * Writes `DIR/config.json` of `count` partners and returns its path; `folders`: each partner's
 * intake made too (its archive/, duplicates/ and rejected/ are made by a first run), so that
 * reading the config looks at folders that are there, as on a host that runs it.
 */
export function writeConfig(dir, count, { folders = false } = {}) {
  const partners = {};
  for (let i = 0; i < count; i++) {
    partners[`partner-${i}`] = {
      intake: intakeOf(i),
      pattern: 'settle_{yyyyMMdd}_*.csv',
      layout: { extends: 'default', table: 'settlement_rows' },
      expect: { every: 'business day', by: '04:00', timeZone: 'Europe/Amsterdam', holidays: 'NL' },
    };
    if (folders) mkdirSync(join(dir, intakeOf(i)), { recursive: true });
  }
  const path = join(dir, 'config.json');
  writeFileSync(path, JSON.stringify({ ledger: 'ledger.sqlite', stableFor: '30s', partners }));
  return path;
}
