import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { MAX_LAYOUT_COLUMNS } from '../../src/layout/model/layout.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { findBadRows } from '../../src/layout/reader/readSettlement.js';
import { suggestLayout } from '../../src/layout/suggest/suggestLayout.js';

function file(text: string, name: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-wide-')), name);
  writeFileSync(path, text);
  return path;
}

/** A CSV of `width` columns (`c1`, `c2`, …) and two rows of small numbers. */
function wideCsv(width: number): string {
  const header = Array.from({ length: width }, (_, i) => `c${i + 1}`);
  const row = (n: number) => header.map((_, i) => String((i + n) % 10));
  return `${[header, row(1), row(2)].map((r) => r.join(',')).join('\n')}\n`;
}

const layoutOf = (width: number) => ({
  table: 'wide',
  columns: Array.from({ length: width }, (_, i) => ({ name: `c${i + 1}`, type: 'integer' })),
  naturalKey: 'c1',
});

describe('layouts as wide as a table holds, and no wider', () => {
  it(`accepts ${MAX_LAYOUT_COLUMNS} columns (PostgreSQL's 1600 less the provenance) and reads a file by them; refuses one more, naming "columns"`, async () => {
    const path = file(wideCsv(MAX_LAYOUT_COLUMNS), 'wide.csv');
    expect((await findBadRows(path, parseLayout(layoutOf(MAX_LAYOUT_COLUMNS), 'config'))).error).toBeNull();
    expect(() => parseLayout(layoutOf(MAX_LAYOUT_COLUMNS + 1), 'config')).toThrow(UsageError);
    expect(() => parseLayout(layoutOf(MAX_LAYOUT_COLUMNS + 1), 'config')).toThrow(
      `config: layout "columns" has ${MAX_LAYOUT_COLUMNS + 1}: a table holds at most ${MAX_LAYOUT_COLUMNS}`,
    );
  });

  it('drafts the widest loadable file, and for a file of 100,000 columns says why there is no draft', async () => {
    const widest = await suggestLayout(file(wideCsv(MAX_LAYOUT_COLUMNS), 'widest.csv'), 'widest.csv');
    expect(widest.draft?.columns).toHaveLength(MAX_LAYOUT_COLUMNS);
    const draft = parseLayout(widest.config.layout, 'draft');
    expect(draft.columns).toHaveLength(MAX_LAYOUT_COLUMNS);

    const s = await suggestLayout(file(wideCsv(100_000), 'huge.csv'), 'huge.csv');
    expect(s.preset).toBeNull();
    expect(s.config).toEqual({});
    expect(s.why).toBe(
      `its records are 100000 fields wide: more columns than a table holds (${MAX_LAYOUT_COLUMNS}), so no layout loads it and none is drafted`,
    );
  });
});
