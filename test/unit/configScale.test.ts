import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { writeConfig } from '../../bench/scaling/configFixture.mjs';
import { effectiveConfig } from '../../src/cli/configCommand.js';
import { resolvePartners } from '../../src/config/settings.js';

/** A config file of `count` partners, each with its own intake, a layout written out, and the deliveries it owes (bench/scaling/configFixture.mjs). */
const configOf = (count: number): string => writeConfig(mkdtempSync(join(tmpdir(), 'settle-scale-')), count);

/** The least CPU time of a few turns of `work` (the least is the one the machine disturbed least). */
function leastCpuMs(work: () => void, turns = 3): number {
  let least = Infinity;
  for (let i = 0; i < turns; i++) {
    const before = process.cpuUsage();
    work();
    const used = process.cpuUsage(before);
    least = Math.min(least, (used.user + used.system) / 1000);
  }
  return least;
}

describe('reading a config file grows in step with its partners', () => {
  // a ratio of two sizes in one run, not a time limit: linear is 4x for 4x the partners (up to ~6x
  // as the larger outgrows the processor's caches), the square 16x; the least of five turns, as a
  // loaded machine stretched single turns of the smaller one's 30 ms to ratios of 3.5 to 8.8
  const small = 1_000;
  const large = 4 * small;
  const smallConfig = configOf(small);
  const largeConfig = configOf(large);

  it('every command reads it (resolvePartners): 4x the partners cost under 10x the time', () => {
    const read = (config: string, count: number) => () => expect(resolvePartners({ config }, {}).partners).toHaveLength(count);
    // the first readings load the layouts and the holiday rules, and warm the compiler
    read(smallConfig, small)();
    read(largeConfig, large)();
    const ratio = leastCpuMs(read(largeConfig, large), 5) / leastCpuMs(read(smallConfig, small), 5);
    expect(ratio).toBeLessThan(10);
  }, 60_000);

  it("`config` shows every partner's settings (effectiveConfig): 4x the partners cost under 10x the time", () => {
    const show = (config: string, count: number) => () =>
      expect(effectiveConfig({ config }, {}).filter((s) => s.setting === 'intake')).toHaveLength(count);
    show(smallConfig, small)();
    const ratio = leastCpuMs(show(largeConfig, large), 5) / leastCpuMs(show(smallConfig, small), 5);
    expect(ratio).toBeLessThan(10);
  }, 60_000);
});

/** V8's own word on an object's shape (`%HasFastProperties`), with its native syntax allowed for this one function. */
function hasFastProperties(value: object): boolean {
  setFlagsFromString('--allow-natives-syntax');
  return (new Function('value', 'return %HasFastProperties(value)') as (v: object) => boolean)(value);
}

describe("each partner's settings", () => {
  it('are objects of V8’s fast shape with every field, the first partner’s own rows never lent to the next', () => {
    const dir = mkdtempSync(join(tmpdir(), 'settle-shape-'));
    const config = join(dir, 'config.json');
    const partners: Record<string, object> = {};
    for (let i = 0; i < 50; i++) partners[`p${i}`] = { intake: `p${i}/in`, layout: { extends: 'default', table: 'settlement_rows' } };
    // the first partner, whose settings become the template of the rest, sets two rows of its own
    partners.p0 = { ...partners.p0, stableFor: '5s', pattern: 'own_*.csv' };
    writeFileSync(config, JSON.stringify({ ledger: 'ledger.sqlite', stableFor: '30s', partners }));
    const all = resolvePartners({ config }, {}).partners;
    expect(all.map((p) => p.partner)).toEqual(Object.keys(partners));
    expect([all[0]!.stableForSeconds, all[0]!.patternText]).toEqual([5, 'own_*.csv']);
    for (const p of all.slice(1)) expect([p.stableForSeconds, p.patternText, p.patternGiven]).toEqual([30, 'settle_*.csv', false]);
    expect(new Set(all.map((p) => p.intake)).size).toBe(50);
    const fields = Object.keys(all[0]!);
    for (const field of [
      'partner',
      'expect',
      'patternText',
      'patternGiven',
      'pattern',
      'staging',
      'layout',
      'tableNamed',
      'ignore',
      'kindSettings',
      'transferLog',
      'decode',
    ])
      expect(fields).toContain(field);
    for (const p of all) {
      expect(Object.keys(p)).toEqual(fields);
      expect(hasFastProperties(p)).toBe(true);
    }
  });
});

describe('layouts and deliveries read once per text', () => {
  it('give each partner its own when neighbours differ only deep inside, and one object when they are the same', () => {
    const dir = mkdtempSync(join(tmpdir(), 'settle-memo-'));
    const config = join(dir, 'config.json');
    const expectIn = (holidays: string) => ({ every: 'business day', by: '04:00', timeZone: 'Europe/Amsterdam', holidays });
    const partners: Record<string, object> = {};
    for (let i = 0; i < 6; i++) {
      partners[`p${i}`] = {
        intake: `p${i}/in`,
        layout: { extends: 'default', table: i % 2 === 0 ? 'even_rows' : 'odd_rows' },
        expect: expectIn(i < 3 ? 'NL' : 'DE'),
      };
    }
    writeFileSync(config, JSON.stringify({ ledger: 'ledger.sqlite', partners }));
    const all = resolvePartners({ config }, {}).partners;
    expect(all.map((p) => p.layout.table)).toEqual(['even_rows', 'odd_rows', 'even_rows', 'odd_rows', 'even_rows', 'odd_rows']);
    expect(all.map((p) => p.expect?.holidays)).toEqual(['NL', 'NL', 'NL', 'DE', 'DE', 'DE']);
    expect(all[0]!.layout).toBe(all[2]!.layout);
    expect(all[0]!.expect).toBe(all[1]!.expect);
    expect(all[3]!.expect).toBe(all[5]!.expect);
  });
});
