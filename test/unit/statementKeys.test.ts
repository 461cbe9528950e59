import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTableSql } from '../../src/finance/layoutTable.js';
import { loadsThroughStaging, tableKey } from '../../src/layout/model/layout.js';
import { toLayoutJson } from '../../src/layout/model/layoutObject.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { decimalIdentity, KeyRepeats } from '../../src/layout/reader/naturalKeys.js';
import { checkContent } from '../../src/pipeline/fileChecks.js';
import { statementLayout } from '../support/statementLayout.js';

const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`../../fixtures/statements/${name}`, import.meta.url), 'utf8')) as { layout: unknown };

const statement = statementLayout;

describe('a natural key of a statement without ids', () => {
  it('may hold a decimal, compared by its value: 10.5, 10.50 and +010.500 are one key, -0.00 is 0', () => {
    expect(['10.5', '10.50', '+010.500'].map(decimalIdentity)).toEqual(['10.5', '10.5', '10.5']);
    expect(['-0.00', '0', '-3.50', '100.00', '-.5', ''].map(decimalIdentity)).toEqual(['0', '0', '-3.5', '100', '-0.5', '']);
    const repeats = new KeyRepeats(statement());
    expect(repeats.repeatOf(['2026-03-16', 'CAFE', '-3.50', null], 2)).toBeUndefined();
    expect(repeats.repeatOf(['2026-03-16', 'CAFE', '-3.5', '12.00'], 3)).toBe(2);
    expect(repeats.repeatOf(['2026-03-16', 'CAFE', '-3.51', null], 4)).toBeUndefined();
  });

  it('may hold any typed column, and an optional one only as text (an empty decimal has no value to compare)', () => {
    expect(statement({ naturalKey: ['booking_date', 'amount'] }).naturalKey).toEqual(['booking_date', 'amount']);
    expect(() => statement({ naturalKey: ['booking_date', 'balance'] })).toThrow(
      'natural key column "balance" is optional and of type decimal: an empty one would be NULL, which a UNIQUE key never finds equal to another, so the row would load again with every resend. Make it required, leave it out of the key, or key on the field read a second time as text ({ "name": "balance_text", "from": "Balance", "type": "text", "required": false }: an empty one is kept as \'\')',
    );
    // the way out it names is a layout that loads: the field read twice, the key on its text
    const twice = statement({
      columns: [
        { name: 'booking_date', from: 'Date', type: 'date', format: 'dd.MM.yyyy' },
        { name: 'text', from: 'Text', type: 'text' },
        { name: 'amount', from: 'Amount', type: 'decimal' },
        { name: 'balance', from: 'Balance', type: 'decimal', required: false },
        { name: 'balance_text', from: 'Balance', type: 'text', required: false },
      ],
      naturalKey: ['booking_date', 'text', 'amount', 'balance_text'],
    });
    expect(twice.naturalKey).toEqual(['booking_date', 'text', 'amount', 'balance_text']);
  });
});

describe('occurrence and seenBefore', () => {
  it('a layout with an occurrence numbers repeated keys in a column of its own, part of the UNIQUE key, and compares rows seen before', () => {
    const layout = statement({ occurrence: true });
    expect(layout).toMatchObject({ occurrence: 'occurrence', seenBefore: true });
    expect(tableKey(layout)).toEqual(['booking_date', 'text', 'amount', 'occurrence']);
    expect(loadsThroughStaging(layout)).toBe(true);
    const sql = createTableSql('settle', layout).join('\n');
    expect(sql).toContain('"occurrence" integer NOT NULL');
    expect(sql).toContain('UNIQUE ("booking_date", "text", "amount", "occurrence")');
    expect(statement({ occurrence: 'same_day_n' }).occurrence).toBe('same_day_n');
  });

  it('seenBefore is off by default for a layout with ids, and may be set either way', () => {
    const ids = statement();
    expect(ids.seenBefore).toBeUndefined();
    expect(loadsThroughStaging(ids)).toBe(false);
    expect(statement({ seenBefore: true })).toMatchObject({ seenBefore: true });
    expect(statement({ occurrence: true, seenBefore: false }).seenBefore).toBeUndefined();
  });

  it('round-trips through the JSON a config writes (what `layout suggest` prints and `extends` starts from)', () => {
    for (const changes of [{ occurrence: true }, { occurrence: 'n', seenBefore: false }, { seenBefore: true }, {}]) {
      const layout = statement(changes);
      expect(parseLayout(toLayoutJson(layout), 'again')).toEqual({ ...layout, name: 'custom' });
    }
  });

  it('names the mistake: an occurrence that is a layout column or reserved, not a name, a seenBefore not a boolean', () => {
    expect(() => statement({ occurrence: 'amount' })).toThrow(/"occurrence": "amount" is one of the layout's columns/);
    expect(() => statement({ occurrence: 'load_id' })).toThrow(/"occurrence": "load_id" is reserved/);
    expect(() => statement({ occurrence: 'Occurrence' })).toThrow(/"occurrence" must be true/);
    expect(() => statement({ occurrence: 1 })).toThrow(/"occurrence" must be true/);
    expect(() => statement({ seenBefore: 'yes' })).toThrow(/"seenBefore" must be true/);
  });

  it('the configs of docs/LAYOUTS.md parse as they are', () => {
    expect(parseLayout(fixture('bank-statement.config.json').layout, 'bank')).toMatchObject({ occurrence: 'occurrence', seenBefore: true });
    expect(parseLayout(fixture('card-statement.config.json').layout, 'card')).toMatchObject({ occurrence: 'occurrence', seenBefore: true });
  });
});

describe('check of a statement without the database', () => {
  const dir = mkdtempSync(join(tmpdir(), 'settle-statement-'));
  const file = join(dir, 'statement.csv');
  writeFileSync(file, 'Date,Text,Amount,Balance\n16.03.2026,CAFE,-3.50,\n16.03.2026,CAFE,-3.5,90.00\n');

  it('takes two identical lines as two rows when the layout numbers them, and refuses them as a repeated key when it does not', async () => {
    expect(await checkContent(file, statement({ occurrence: true }), { fileName: 'statement.csv', plain: true })).toMatchObject({
      rows: 2,
      error: null,
    });
    const refused = await checkContent(file, statement(), { fileName: 'statement.csv', plain: true });
    expect(refused.error?.message).toBe(
      'field (booking_date, text, amount): 1 value(s) already used: line 3: "2026-03-16" "CAFE" "-3.5" repeats line 2 of this file',
    );
  });
});
