import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolvePartners, resolveSettings } from '../../src/config/settings.js';
import { UsageError } from '../../src/errors.js';
import { dayInName } from '../../src/intake/names.js';
import { globToRegExp } from '../../src/intake/names.js';

/** A config file of two partners, written to a folder of its own. */
function twoPartners(extra: Record<string, unknown> = {}, partners: Record<string, unknown> = {}): { config: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'settle-partners-'));
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      ledger: 'ledger.sqlite',
      stableFor: 60,
      partners: {
        adyen: { intake: 'adyen/intake', layout: 'adyen-settlement-details', pattern: 'settlement_detail_report_batch_*.csv' },
        stripe: {
          intake: 'sftp://ingest@sftp.stripe.example/out',
          stableFor: '2m',
          expect: { every: 'business day', by: '04:00', timeZone: 'Europe/Amsterdam', holidays: 'NL', warnAfter: '1h' },
        },
        ...partners,
      },
      ...extra,
    }),
  );
  return { config, dir };
}

const refused = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  throw new Error('not refused');
};

describe('partners in one config file', () => {
  it('gives each partner its own settings over the shared ones, paths relative to the file, in the file order', () => {
    const { config, dir } = twoPartners();
    const { partners, configured, named } = resolvePartners({ config }, {});
    expect(named).toBe(true);
    expect(configured).toEqual(['adyen', 'stripe']);
    const [adyen, stripe] = partners;
    expect(adyen).toMatchObject({
      partner: 'adyen',
      intake: join(dir, 'adyen/intake'),
      stableForSeconds: 60,
      ledger: join(dir, 'ledger.sqlite'),
    });
    expect(adyen!.layout.name).toBe('adyen-settlement-details');
    expect(adyen!.expect).toBeUndefined();
    expect(stripe).toMatchObject({ partner: 'stripe', stableForSeconds: 120, pattern: 'settle_*.csv', ledger: join(dir, 'ledger.sqlite') });
    expect(stripe!.expect).toEqual({
      every: 'business day',
      weekdays: [1, 2, 3, 4, 5],
      holidays: 'NL',
      by: '04:00',
      timeZone: 'Europe/Amsterdam',
      files: 1,
      warnAfterSeconds: 3600,
      errorAfterSeconds: 86_400,
    });
  });

  it('takes the partners asked for with --partner (repeated, or with commas) or SETTLE_PARTNER, in the file order', () => {
    const { config } = twoPartners();
    expect(resolvePartners({ config, partner: ['stripe'] }, {}).partners.map((p) => p.partner)).toEqual(['stripe']);
    expect(resolvePartners({ config, partner: ['stripe', 'adyen'] }, {}).partners.map((p) => p.partner)).toEqual(['adyen', 'stripe']);
    expect(resolvePartners({ config }, { SETTLE_PARTNER: 'stripe,adyen' }).partners).toHaveLength(2);
    expect(refused(() => resolvePartners({ config, partner: ['strype'] }, {}))).toMatch(/no partner "strype" .*did you mean "stripe"\?/);
  });

  it('gives the --partner filter the commands read: the names asked for, or undefined for all', () => {
    const { config } = twoPartners();
    expect(resolvePartners({ config }, {}).asked).toBeUndefined();
    expect(resolvePartners({ config }, { SETTLE_PARTNER: '' }).asked).toBeUndefined();
    expect(resolvePartners({ config, partner: ['stripe', 'adyen'] }, {}).asked).toEqual(['adyen', 'stripe']);
    expect(resolvePartners({ config }, { SETTLE_PARTNER: 'stripe' }).asked).toEqual(['stripe']);
    expect(resolvePartners({ config, partner: ['adyen'] }, { SETTLE_PARTNER: 'stripe' }).asked).toEqual(['adyen']);
    // a report may filter on a partner the config no longer has (its ledger keeps its runs), without "partners" only
    const single = join(mkdtempSync(join(tmpdir(), 'settle-partners-')), 'config.json');
    writeFileSync(single, JSON.stringify({ ledger: 'ledger.sqlite' }));
    expect(resolvePartners({ config: single, partner: ['gone'] }, {}, { unconfigured: 'allow' }).asked).toEqual(['gone']);
  });

  it('applies a flag to every partner, but a partner’s own setting (its intake) only to one chosen partner', () => {
    const { config } = twoPartners();
    expect(resolvePartners({ config, stableFor: '0' }, {}).partners.map((p) => p.stableForSeconds)).toEqual([0, 0]);
    expect(refused(() => resolvePartners({ config, intake: '/elsewhere' }, {}))).toMatch(
      /^--intake is one partner's own setting: with 2 partners \(adyen, stripe\), choose one with --partner NAME/,
    );
    expect(refused(() => resolvePartners({ config }, { SETTLE_PATTERN: 'x_*.csv' }))).toMatch(
      /^SETTLE_PATTERN is one partner's own setting/,
    );
    expect(resolvePartners({ config, partner: ['adyen'], intake: '/elsewhere' }, {}).partners[0]!.intake).toBe('/elsewhere');
    expect(refused(() => resolveSettings({ config }, {}))).toMatch(/names 2 partners \(adyen, stripe\): this command works on one/);
  });

  it.each([
    [{ adyen: { ledger: 'x.sqlite' } }, '"partners"."adyen": "ledger" is shared by all partners: set it at the top'],
    [{ stripe: { stableFor: 'soon' } }, '"partners"."stripe"."stableFor": expected a duration'],
    [{ adyen: { intak: 'x' } }, '"partners"."adyen": unknown setting "intak" (did you mean "intake"?)'],
    [{ Adyen: { intake: 'y' } }, 'partner name "Adyen" must be lower-case letters, digits and -'],
    [{ bank: { intake: 'adyen/intake' } }, 'partners "adyen" and "bank" share one folder: adyen\'s intake and bank\'s intake are both'],
    [{ bank: { intake: 'b', pattern: 'b_{yyyyMMdd}_{yyyyMMdd}.csv' } }, 'at most one date token'],
    [
      { bank: { intake: 'b', expect: { by: '4am', timeZone: 'UTC' } } },
      '"partners"."bank"."expect"."by": expected a time of day such as "04:00"',
    ],
    [{ bank: { intake: 'b', expect: { by: '04:00' } } }, '"partners"."bank"."expect"."timeZone": required'],
    [{ bank: { intake: 'b', expect: { by: '04:00', timeZone: 'Mars/Olympus' } } }, '"timeZone": expected an IANA time zone'],
    [
      { bank: { intake: 'b', expect: { by: '04:00', timeZone: 'Europe/Amsterdm' } } },
      '"timeZone": expected an IANA time zone such as "Europe/Amsterdam" or "UTC", got "Europe/Amsterdm" (did you mean "Europe/Amsterdam"?)',
    ],
    [
      { bank: { intake: 'b', expect: { by: '04:00', timeZone: 'UTC', every: 'weekday' } } },
      '"every": expected "day", "business day" or a list of weekdays',
    ],
    [{ bank: { intake: 'b', expect: { by: '04:00', timeZone: 'UTC', holidays: 'XX' } } }, '"holidays": "XX" is not a country code'],
    [{ bank: { intake: 'b', expect: { by: '04:00', timeZone: 'UTC', holidays: 'DE-XX' } } }, '"holidays": "DE-XX": DE has no region XX'],
    [
      { bank: { intake: 'b', expect: { by: '04:00', timeZone: 'UTC', warnAfter: '2h', errorAfter: '1h' } } },
      '"errorAfter": must not be shorter than "warnAfter"',
    ],
  ])('refuses a mistake in one partner’s settings, naming the partner and the key: %j', (partners, words) => {
    const { config } = twoPartners({}, partners);
    expect(refused(() => resolvePartners({ config, partner: ['adyen'] }, {}))).toContain(words);
  });

  it('names the first mistake a partner has, its own or a shared one it does not override, in the order the settings are read', () => {
    // the top's stableFor is wrong; adyen overrides it, so only stripe (which does not) is refused for it
    const shared = twoPartners(
      { stableFor: 'soon' },
      { adyen: { intake: 'adyen/intake', stableFor: '1m' }, stripe: { intake: 'sftp://ingest@sftp.stripe.example/out' } },
    );
    expect(refused(() => resolvePartners({ config: shared.config }, {}))).toBe(
      `${shared.config}: "stableFor": expected a duration such as 30, 30s, 90m, 1h30m, 26h or 2d, got "soon"`,
    );
    // stripe's own empty intake comes before stableFor in the option table: it is named, not the shared mistake
    const own = twoPartners(
      { stableFor: 'soon' },
      { adyen: { intake: 'adyen/intake', stableFor: '1m' }, stripe: { intake: '', stableFor: 'later' } },
    );
    expect(refused(() => resolvePartners({ config: own.config }, {}))).toMatch(/"partners"\."stripe"\."intake": is empty/);
    // the same expectations written out by two partners are each checked: the second's mistake is still its own
    const expectation = { every: 'business day', by: '04:00', timeZone: 'Europe/Amsterdam' };
    const second = twoPartners(
      {},
      { adyen: { intake: 'adyen/intake', expect: expectation }, stripe: { intake: 's/in', expect: { ...expectation, by: '4 am' } } },
    );
    expect(refused(() => resolvePartners({ config: second.config }, {}))).toMatch(
      /"partners"\."stripe"\."expect"\."by": expected a time of day/,
    );
  });

  it('is one partner, "default", without "partners"', () => {
    const { partners, configured, named } = resolvePartners({ intake: '/srv/in' }, {});
    expect({ configured, named }).toEqual({ configured: ['default'], named: false });
    expect(partners.map((p) => [p.partner, p.intake])).toEqual([['default', '/srv/in']]);
    expect(resolveSettings({ partner: ['default'] }, {}).partner).toBe('default');
    expect(refused(() => resolveSettings({ partner: ['adyen'] }, {}))).toMatch(/no partner "adyen"/);
    // the reports filter what the ledger holds by any partner's name
    expect(resolvePartners({ partner: ['adyen'] }, {}, { unconfigured: 'allow' }).partners.map((p) => p.partner)).toEqual(['adyen']);
  });

  it('reads a date in a name by the pattern’s token, and the pattern still matches as a glob', () => {
    const s = resolveSettings({ pattern: 'stripe_{yyyyMMdd}_*.csv' }, {});
    expect(s.patternText).toBe('stripe_{yyyyMMdd}_*.csv');
    expect(globToRegExp(s.pattern).test('stripe_20260316_a01.csv')).toBe(true);
    expect(globToRegExp(s.pattern).test('stripe_2026031_a01.csv')).toBe(false);
    expect(dayInName(s.patternText, 'stripe_20260316_a01.csv')).toBe('2026-03-16');
    expect(dayInName(s.patternText, 'stripe_20260231_a01.csv')).toBeNull();
    expect(dayInName('*_{yyyy-MM-dd}.csv', 'payout_reconciliation_2026-03-16.csv')).toBe('2026-03-16');
    expect(dayInName('settle_*.csv', 'settle_20260316.csv')).toBeNull();
  });
});

describe('what partners may not share', () => {
  /** A config of these partners in a folder of its own; paths in it are relative to that folder. */
  const configOf = (partners: Record<string, unknown>, top: Record<string, unknown> = {}) => {
    const dir = mkdtempSync(join(tmpdir(), 'settle-shared-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ ...top, partners }));
    return { dir, config };
  };

  it('refuses two intakes that are one folder through a symlink, naming both partners and the real folder', () => {
    const { dir, config } = configOf({ adyen: { intake: 'adyen/intake' }, stripe: { intake: 'stripe-in' } });
    mkdirSync(join(dir, 'adyen/intake'), { recursive: true });
    symlinkSync(join(dir, 'adyen/intake'), join(dir, 'stripe-in'));
    expect(refused(() => resolvePartners({ config }, {}))).toBe(
      `partners "adyen" and "stripe" share one folder: adyen's intake ${join(dir, 'adyen/intake')} and stripe's intake ${join(dir, 'stripe-in')} are one folder, ${join(dir, 'adyen/intake')} (links resolved): each partner needs folders of its own`,
    );
  });

  it("refuses one partner's archive (default or set, existing or not yet) being another's intake or final folder", () => {
    // bank's intake is adyen's default archive, a sibling of adyen's intake that does not exist yet
    const sibling = configOf({ adyen: { intake: 'adyen/intake' }, bank: { intake: 'adyen/archive', archive: 'bank/archive' } });
    expect(refused(() => resolvePartners({ config: sibling.config }, {}))).toMatch(
      /^partners "adyen" and "bank" share one folder: adyen's archive and bank's intake are both .*\/adyen\/archive: each partner/,
    );
    // intakes side by side would share their default archive/, the sibling of each
    const sideBySide = configOf({ adyen: { intake: 'adyen' }, bank: { intake: 'bank' } });
    expect(refused(() => resolvePartners({ config: sideBySide.config }, {}))).toMatch(
      /adyen's archive and bank's archive are both .*\/archive: each partner needs folders of its own \(archive, duplicates and rejected default to siblings of its intake\)$/,
    );
    const { dir, config } = configOf({ adyen: { intake: 'a/in', rejected: 'shared' }, bank: { intake: 'b/in', rejected: 'link/shared' } });
    symlinkSync(dir, join(dir, 'link'));
    expect(refused(() => resolvePartners({ config }, {}))).toMatch(/adyen's rejected .* and bank's rejected .* are one folder/);
  });

  it('tells SFTP folders by login, server and normalized path', () => {
    const same = configOf({ adyen: { intake: 'sftp://in@Sftp.example:22/out' }, bank: { intake: 'sftp://in@sftp.example//out/' } });
    expect(refused(() => resolvePartners({ config: same.config }, {}))).toMatch(
      /^partners "adyen" and "bank" share one folder: adyen's intake sftp:\/\/in@Sftp\.example:22\/out and bank's intake sftp:\/\/in@sftp\.example:22\/\/out are one folder, sftp:\/\/in@sftp\.example:22\/out: /,
    );
    const archive = configOf({ adyen: { intake: 'sftp://in@h/a/in', archive: '/b/in' }, bank: { intake: 'sftp://in@h:22/b/in' } });
    expect(refused(() => resolvePartners({ config: archive.config }, {}))).toMatch(/adyen's archive and bank's intake are both sftp:/);
    // two logins may each see a folder of their own under one path (a chroot per partner)
    const chroots = configOf(
      { adyen: { intake: 'sftp://adyen@h/upload' }, bank: { intake: 'sftp://bank@h/upload' } },
      { layout: { extends: 'default', table: 'settlement_rows' } },
    );
    expect(resolvePartners({ config: chroots.config }, {}).partners).toHaveLength(2);
  });

  it("lets partners share a table only when each one's layout names it, and refuses one they define differently", () => {
    const named = (preset: string, table: string) => ({ extends: preset, table });
    const shared = configOf({
      a: { intake: 'a/in', layout: named('adyen-settlement-details', 'adyen_settlement_details') },
      b: { intake: 'b/in', layout: named('adyen-settlement-details', 'adyen_settlement_details') },
      c: { intake: 'c/in', layout: named('default', 'settlement_rows') },
      d: { intake: 'd/in', layout: named('default', 'settlement_rows') },
    });
    expect(resolvePartners({ config: shared.config }, {}).partners.map((p) => p.layout.table)).toEqual([
      'adyen_settlement_details',
      'adyen_settlement_details',
      'settlement_rows',
      'settlement_rows',
    ]);
  });

  it('refuses two partners on one table that not both layouts name: the default layout, a preset, either side', () => {
    const silent = configOf({ bank: { intake: 'a/in' }, 'bank-de': { intake: 'b/in' } });
    expect(refused(() => resolvePartners({ config: silent.config }, {}))).toBe(
      'partners "bank" and "bank-de" both load into table settle.settlement_rows, and neither one\'s layout names it: ' +
        'partners share a table only when each one\'s layout names it. To share it, add "table": "settlement_rows" to each one\'s layout ' +
        '(a preset\'s or the default\'s by extending it: "layout": { "extends": "default", "table": "settlement_rows" }); ' +
        'to keep them apart, give one a table of its own ("table": "bank_de_rows")',
    );
    const oneSide = configOf({
      a: { intake: 'a/in', layout: 'adyen-settlement-details' },
      b: { intake: 'b/in', layout: { extends: 'adyen-settlement-details', table: 'adyen_settlement_details' } },
    });
    expect(refused(() => resolvePartners({ config: oneSide.config }, {}))).toMatch(
      /^partners "a" and "b" both load into table settle\.adyen_settlement_details, and the layout of "a" does not name it: .*"extends": "adyen-settlement-details", "table": "adyen_settlement_details"/,
    );
    // a layout at the top names it for every partner that takes it
    const top = configOf({ a: { intake: 'a/in' }, b: { intake: 'b/in' } }, { layout: { extends: 'default', table: 'settlement_rows' } });
    expect(resolvePartners({ config: top.config }, {}).partners).toHaveLength(2);
    const differ = configOf({
      a: { intake: 'a/in', layout: { extends: 'default', table: 'settlement_rows' } },
      b: { intake: 'b/in', layout: { extends: 'adyen-settlement-details', table: 'settlement_rows' } },
    });
    expect(refused(() => resolvePartners({ config: differ.config }, {}))).toBe(
      'partners "a" and "b" both load into table settle.settlement_rows, but their layouts define it differently: give one layout a "table" of its own (or the same columns and natural key, to share it)',
    );
  });

  it('refuses a partner named twice, or a key given twice, naming the file and both places', () => {
    const dir = mkdtempSync(join(tmpdir(), 'settle-twice-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, '{\n  "partners": {\n    "adyen": {"intake": "a"},\n    "adyen": {"intake": "b"}\n  }\n}\n');
    expect(refused(() => resolvePartners({ config }, {}))).toBe(
      `config file ${config}: "partners"."adyen" is given twice (line 3, column 5, and line 4, column 5): JSON would keep only the last and ignore the first: keep one`,
    );
    writeFileSync(config, '{"partners": {"adyen": {"intake": "a", "pattern": "x_*.csv",\n "pattern": "y_*.csv"}}}');
    expect(refused(() => resolvePartners({ config }, {}))).toMatch(
      /: "partners"\."adyen"\."pattern" is given twice \(line 1, column 40, and line 2, column 2\)/,
    );
    writeFileSync(config, '{\n  "ledger": "l.sqlite"\n  "stableFor": 0\n}');
    expect(refused(() => resolvePartners({ config }, {}))).toBe(
      `config file ${config} is not valid JSON: line 3, column 3: expected "," or "}" after a value in an object, found "\\""`,
    );
  });
});

describe('docs/PARTNERS.md', () => {
  it('shows a two-partner config, with the expected deliveries, that settle-ingest takes as it stands', () => {
    const readme = readFileSync(new URL('../../docs/PARTNERS.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Several partners'));
    const json = /```json\n([\s\S]*?)```/.exec(section)![1]!;
    const config = join(mkdtempSync(join(tmpdir(), 'settle-readme-')), 'config.json');
    writeFileSync(config, json);
    const { partners } = resolvePartners({ config }, {});
    expect(partners.map((p) => [p.partner, p.layout.name, p.expect?.every])).toEqual([
      ['adyen', 'adyen-settlement-details', 'day'],
      ['stripe', 'stripe-itemized-payout-reconciliation', 'business day'],
    ]);
    expect(dayInName(partners[1]!.patternText, 'stripe_payout_reconciliation_2026-03-16.csv')).toBe('2026-03-16');
  });
});
