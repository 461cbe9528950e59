import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { configJsonSchema } from '../../src/config/jsonSchema.js';
import { OPTION_TABLE, SETTING_KEYS, type OptionSpec } from '../../src/config/optionTable.js';
import { resolvePartners } from '../../src/config/settings.js';
import { integerRangeAlternatives, SWITCH_WORDS } from '../../src/config/valueRules.js';
import { UsageError } from '../../src/errors.js';
import { AGREEMENT_CASES, SCHEMA_CANNOT_SAY } from '../support/settingCases.js';

const validate = new Ajv2020({ strict: true }).compile(configJsonSchema());
const folder = mkdtempSync(join(tmpdir(), 'settle-agree-'));
let written = 0;

/** What each reader answers for one config text: the schema (ajv), and settle-ingest's own reading (exit 2 on a mistake). */
function answers(text: string): { schema: boolean; cli: boolean; refusal?: string } {
  const path = join(folder, `config-${written++}.json`);
  writeFileSync(path, text);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const schema = parsed !== undefined && validate(parsed);
  try {
    resolvePartners({ config: path }, {});
    return { schema, cli: true };
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    expect(err.exitStatus).toBe(2);
    return { schema, cli: false, refusal: err.message };
  }
}

const textOf = (config: Record<string, unknown> | string) => (typeof config === 'string' ? config : JSON.stringify(config));

describe('the JSON Schema and settle-ingest take the same config files', () => {
  it.each(AGREEMENT_CASES.map((c) => [textOf(c.config).slice(0, 80), c] as const))('%s', (_, c) => {
    const got = answers(textOf(c.config));
    expect({ schema: got.schema, cli: got.cli }, got.refusal).toEqual({ schema: c.taken, cli: c.taken });
  });

  it('the cases hold the 23 that once split them, and each kind of setting both taken and refused', () => {
    expect(AGREEMENT_CASES.filter((c) => c.issue).length).toBeGreaterThanOrEqual(23);
    const kinds = new Map<string, Set<boolean>>();
    for (const c of AGREEMENT_CASES) {
      if (typeof c.config === 'string') continue;
      for (const key of Object.keys(c.config)) {
        const spec = OPTION_TABLE[key as keyof typeof OPTION_TABLE] as OptionSpec | undefined;
        if (spec) kinds.set(spec.kind, (kinds.get(spec.kind) ?? new Set()).add(c.taken));
      }
    }
    for (const kind of ['string', 'duration', 'count', 'bytes', 'globs', 'paths', 'expect', 'switch']) {
      expect([...(kinds.get(kind) ?? [])].sort(), kind).toEqual([false, true]);
    }
  });

  it('what the schema cannot say is refused by settle-ingest alone, naming the key', () => {
    for (const { config, key, why } of SCHEMA_CANNOT_SAY) {
      const got = answers(JSON.stringify(config));
      expect(got.schema, why).toBe(true);
      expect(got.cli, why).toBe(false);
      expect(got.refusal, why).toContain(key);
    }
  });

  it("an empty or blank path or URL is refused naming the setting, never read as the config file's folder", () => {
    const pathKeys = SETTING_KEYS.filter((key) => (OPTION_TABLE[key] as OptionSpec).path || key === 'databaseUrl');
    expect(pathKeys.length).toBeGreaterThanOrEqual(14);
    for (const key of pathKeys) {
      for (const value of ['', ' ', ['']]) {
        if (Array.isArray(value) && OPTION_TABLE[key].kind !== 'paths') continue;
        const got = answers(JSON.stringify({ [key]: value }));
        expect({ schema: got.schema, cli: got.cli }, `${key} ${JSON.stringify(value)}`).toEqual({ schema: false, cli: false });
        expect(got.refusal).toContain(`"${key}"`);
      }
    }
    // from a flag too; a variable set to nothing is a variable not set
    expect(() => resolvePartners({ ledger: '' }, {})).toThrow(/^--ledger: is empty/);
    expect(resolvePartners({}, { SETTLE_LEDGER: '' }).partners[0]!.ledger).toBe('./settle-ledger.sqlite');
  });
});

describe('each grammar, enumerated both ways', () => {
  it('durations: every mix of numbers, units, cases, spaces and orders', () => {
    const numbers = ['0', '30', '1.5', '.5', '1.', '-1'];
    const units = ['', 'd', 'h', 'm', 's', 'M', 'S', 'x', 'ms', 'min'];
    const spaces = ['', ' '];
    let taken = 0;
    for (const first of numbers)
      for (const unit of units)
        for (const gap of spaces)
          for (const second of ['', ...numbers.slice(0, 3).flatMap((n) => ['h', 'm', 's'].map((u) => `${gap}${n}${u}`))]) {
            const text = `${first}${gap}${unit}${second}`;
            const got = answers(JSON.stringify({ maxWait: text }));
            expect(got.schema, text).toBe(got.cli);
            if (got.cli) taken++;
          }
    expect(taken).toBeGreaterThan(50);
  });

  it("whole numbers: each side of every count and size setting's range, as a number and as text", () => {
    const keys = SETTING_KEYS.filter((key) => ['count', 'bytes'].includes(OPTION_TABLE[key].kind));
    for (const key of keys) {
      const { min = 0, max = Number.MAX_SAFE_INTEGER } = (OPTION_TABLE[key] as OptionSpec).range ?? {};
      for (const n of [min - 1, min, min + 1, Math.floor((min + max) / 2), max - 1, max, max + 1, 10 ** String(max).length]) {
        for (const value of [n, String(n), ` ${n}`, `0${n}`, n + 0.5]) {
          const got = answers(JSON.stringify({ [key]: value }));
          expect(got.schema, `${key} ${JSON.stringify(value)}`).toBe(got.cli);
        }
      }
    }
  });

  it('a range written as a pattern holds exactly the numbers of the range', () => {
    for (const [low, high] of [
      [0, 999_999],
      [2, 100_000],
      [1024, 64 * 1024 * 1024],
      [1, 10_000],
      [1024, Number.MAX_SAFE_INTEGER],
      [37, 4_096],
    ] as const) {
      const pattern = new RegExp(`^0*(?:${integerRangeAlternatives(low, high).join('|')})$`);
      const probes = [low - 1, low, low + 1, high - 1, high, high + 1];
      for (let digits = 1; digits <= 17; digits++) for (let i = 0; i < 40; i++) probes.push(Math.floor(Math.random() * 10 ** digits));
      for (const n of probes.filter((x) => x >= 0)) expect(pattern.test(String(n)), `${n} in ${low}..${high}`).toBe(n >= low && n <= high);
    }
  });

  it('switches: every word in upper, lower and mixed case, with and without spaces', () => {
    for (const word of [...SWITCH_WORDS.on, ...SWITCH_WORDS.off, 'on', 'off', 'y', 'n', '']) {
      for (const text of [word, word.toUpperCase(), word.charAt(0).toUpperCase() + word.slice(1), ` ${word} `]) {
        const got = answers(JSON.stringify({ quick: text }));
        expect(got.schema, JSON.stringify(text)).toBe(got.cli);
      }
    }
  });
});
