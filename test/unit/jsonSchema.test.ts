import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { configJsonSchema } from '../../src/config/jsonSchema.js';
import { OPTION_TABLE, SETTING_KEYS } from '../../src/config/optionTable.js';
import { EXPECT_KEYS } from '../../src/config/calendarSettings.js';
import { resolvePartners } from '../../src/config/settings.js';
import { COLUMN_KEYS } from '../../src/layout/model/layoutColumns.js';
import { LAYOUT_KEYS } from '../../src/layout/model/layoutObject.js';
import { PRESETS } from '../../src/layout/model/presets.js';

const schema = configJsonSchema();
// Ajv's strict mode, every strict option on (strictSchema, strictNumbers, strictTypes, strictTuples,
// strictRequired), no union types allowed: as an editor's or a CI's checker set to strict compiles it
const validate = new Ajv2020({ strict: true }).compile(schema);
const valid = (config: unknown) => {
  const ok = validate(config);
  return ok ? 'valid' : JSON.stringify(validate.errors);
};

const ROOT = join(import.meta.dirname, '..', '..');

/** Every config file the repository ships or shows: fixtures/, ops/, and the README's and docs' JSON blocks that are configs. */
function sampleConfigs(): { where: string; config: unknown }[] {
  const files = (dir: string, recurse = true): string[] =>
    readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? (recurse ? files(join(dir, e.name)) : []) : e.name.endsWith('.json') ? [join(dir, e.name)] : [],
    );
  const shipped = [...files('fixtures'), ...files('ops')].map((f) => ({
    where: f,
    config: JSON.parse(readFileSync(join(ROOT, f), 'utf8')),
  }));
  const shown: { where: string; config: unknown }[] = [];
  for (const doc of [
    'README.md',
    'ops/RUNBOOK.md',
    ...readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ]) {
    const lines = readFileSync(join(ROOT, doc), 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (lines[i]!.trim() !== '```json') continue;
      const end = lines.findIndex((l, j) => j > i && l.trim() === '```');
      const block = JSON.parse(lines.slice(i + 1, end).join('\n')) as unknown;
      // a config is an object of settings (other blocks show --json output, which has "version")
      const keys = block && typeof block === 'object' && !Array.isArray(block) ? Object.keys(block) : [];
      if (keys.length > 0 && keys.every((k) => (SETTING_KEYS as string[]).includes(k) || k === 'partners' || k === '$schema')) {
        shown.push({ where: `${doc}:${i + 1}`, config: block });
      }
      i = end;
    }
  }
  return [...shipped, ...shown];
}

describe("the config file's JSON Schema", () => {
  it('is draft 2020-12 and names every setting, the partners, expect and the layout keys from their sources', () => {
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    const top = schema.properties as Record<string, { description?: string }>;
    expect(Object.keys(top).sort()).toEqual(['$schema', ...SETTING_KEYS, 'partners'].sort());
    expect(top.stableFor!.description).toContain(OPTION_TABLE.stableFor.description);
    const defs = schema.$defs as Record<string, { properties: Record<string, unknown>; anyOf?: { enum?: string[] }[] }>;
    expect(Object.keys(defs.expect!.properties)).toEqual(EXPECT_KEYS);
    expect(Object.keys(defs.layoutObject!.properties)).toEqual(LAYOUT_KEYS);
    expect(Object.keys(defs.column!.properties)).toEqual(COLUMN_KEYS);
    expect(defs.layout!.anyOf![0]!.enum).toEqual([...PRESETS.keys()]);
  });

  it("compiles in Ajv's strict mode, every strict rule kept, and so does each part of it on its own", () => {
    const strictly = () =>
      new Ajv2020({ strict: true, strictRequired: true, strictTypes: true, strictTuples: true, allowUnionTypes: false });
    expect(() => strictly().compile(schema)).not.toThrow();
    // a layout checked alone (an editor's schema for a layout file) meets the same rules
    const defs = (schema as { $defs: Record<string, object> }).$defs;
    expect(() => strictly().compile({ ...defs.layoutObject, $defs: defs })).not.toThrow();
    // the rule written for it: a layout of its own lists its columns, one that extends a preset may change some
    expect(valid({ layout: { table: 'bank_rows' } })).toMatch(/"missingProperty":"columns"/);
    expect(valid({ layout: { columns: { fee: null } } })).toMatch(/"type":"array"/);
    expect(valid({ layout: { extends: 'default', table: 'bank_rows', columns: { fee: null } } })).toBe('valid');
  });

  it('takes every sample config the repository ships or shows', () => {
    const samples = sampleConfigs();
    expect(samples.length).toBeGreaterThanOrEqual(11);
    for (const { where, config } of samples) expect(valid(config), where).toBe('valid');
  });

  it('takes what the reader takes: several partners, expect, durations as text or seconds, layouts by name, object or extends', () => {
    const config = {
      $schema: './settle-ingest.schema.json',
      ledger: '/srv/settle/ledger.sqlite',
      databaseUrl: 'postgres://ingest@db/finance',
      stableFor: '1m30s',
      maxWaitingRuns: 3,
      expect: { every: 'business day', by: '04:00', timeZone: 'Europe/Amsterdam', holidays: 'NL', errorAfter: '24h' },
      partners: {
        adyen: {
          intake: 'sftp://ingest@sftp.adyen.example/out',
          hostKeyFingerprint: `SHA256:${'A'.repeat(43)}`,
          layout: 'adyen-settlement-details',
        },
        'bank-nl': {
          intake: '/srv/bank/intake',
          expect: { every: ['Mon', 'thursday'], by: '9:30', timeZone: 'UTC', files: 2 },
          ignore: ['*.md5', 'README*'],
          layout: { extends: 'default', table: 'bank_rows', columns: { fee: { type: 'decimal', required: false }, currency: null } },
        },
        stripe: {
          intake: '/srv/stripe/intake',
          expect: null,
          layout: {
            table: 'stripe_rows',
            delimiter: ';',
            decimalMark: ',',
            groupSeparator: "'",
            columns: [
              { name: 'transaction_id', type: 'text' },
              { name: 'amount', from: ['Amount', 'Betrag'], type: 'decimal', scale: 'asWritten' },
              { name: 'booked_at', type: 'timestamp', format: 'dd.MM.yyyy HH:mm', timeZone: 'UTC' },
              { name: 'fee', type: 'decimal', currencySymbols: ['€', 'EUR'] },
              { name: 'units', type: 'decimal', minorUnits: 'currency', currencyFrom: 'currency' },
              { name: 'currency', type: 'currency' },
            ],
            trailer: { firstField: 'Total', rowCountField: 2 },
          },
        },
      },
    };
    expect(valid(JSON.parse(JSON.stringify(config)))).toBe('valid');
    // and settle-ingest reads it too, `$schema` and all
    const path = join(mkdtempSync(join(tmpdir(), 'settle-schema-')), 'config.json');
    writeFileSync(path, JSON.stringify(config));
    expect(resolvePartners({ config: path }, {}).partners.map((p) => p.partner)).toEqual(['adyen', 'bank-nl', 'stripe']);
  });

  it('refuses a config with an unknown key, at the top, in a partner, in expect or in a layout, as the reader does', () => {
    expect(valid({ intkae: '/srv/in' })).toMatch(/additionalProperties/);
    expect(valid({ partners: { adyen: { ledger: '/srv/l.sqlite' } } })).toMatch(/additionalProperties/);
    expect(valid({ expect: { by: '04:00', timeZone: 'UTC', every_: 'day' } })).toMatch(/additionalProperties/);
    expect(valid({ layout: { columns: [{ name: 'id', type: 'text', colour: 'red' }] } })).toMatch(/additionalProperties/);
    expect(valid({ partners: { Adyen: { intake: '/srv/in' } } })).toMatch(/propertyNames|pattern/);
  });

  it('refuses a wrong-typed value: a number for a path, a word for a duration or a count, an unknown preset or choice', () => {
    expect(valid({ intake: 42 })).not.toBe('valid');
    expect(valid({ stableFor: 'soon' })).not.toBe('valid');
    expect(valid({ stableFor: true })).not.toBe('valid');
    expect(valid({ maxWaitingRuns: 'lots' })).not.toBe('valid');
    expect(valid({ layout: 'no-such-preset' })).not.toBe('valid');
    expect(valid({ mode: 'sometimes' })).not.toBe('valid');
    expect(valid({ expect: { by: '25:00', timeZone: 'UTC' } })).not.toBe('valid');
    expect(valid({ layout: { columns: [{ name: 'id', type: 'money' }] } })).not.toBe('valid');
    expect(valid({ layout: { columns: [{ name: 'id', type: 'decimal', minorUnits: 'cents' }] } })).not.toBe('valid');
    expect(valid({ layout: { columns: [{ name: 'id', type: 'decimal', currencySymbols: [] }] } })).not.toBe('valid');
    expect(valid({ layout: { groupSeparator: '\u2019', columns: [{ name: 'id', type: 'text' }] } })).not.toBe('valid');
  });
});
