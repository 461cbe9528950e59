import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HEADER } from '../../src/demo/sampleSettlement.js';
import { DEFAULT_LAYOUT } from '../../src/layout/model/layout.js';
import { checkContent } from '../../src/pipeline/fileChecks.js';

function file(content: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-checks-')), 'settle_20261202_a01.csv');
  writeFileSync(path, content);
  return path;
}

const row = (id: string) => `2026-12-02,${id},M1,VISA,sale,10.00,0.15,9.85,EUR`;
const check = (path: string, plain = true) => checkContent(path, DEFAULT_LAYOUT, { fileName: 'settle_20261202_a01.csv', plain });

describe("check's content checks, the run's own without a database", () => {
  it('counts the rows of a good file', async () => {
    expect(await check(file(`${HEADER}\n${row('T-1')}\n${row('T-2')}\n`))).toMatchObject({ rows: 2, skippedRows: 0, error: null });
  });

  it('refuses a natural key repeated within the file, naming both lines as the run names them', async () => {
    const r = await check(file(`${HEADER}\n${row('T-1')}\n${row('T-2')}\n${row('T-1')}\n`));
    expect(r.error?.message).toMatch(/line 4: "T-1" repeats line 2 of this file/);
    expect(r.error?.field).toBe('transaction_id');
  });

  it('says a plain upload stopped mid-line is one a run waits for, and a wrapped one is judged by the reader alone', async () => {
    const cut = file(`${HEADER}\n${row('T-1')}\n2026-12-02,T-2,M1`);
    const plain = await check(cut);
    expect(plain.error?.message).toMatch(/^the upload stopped mid-line 3 .*: a run leaves it in the intake as not ready/);
    expect(plain.error?.field).toBe('incomplete');
    const wrapped = await check(cut, false);
    expect(wrapped.error?.message).toMatch(/^line 3: expected 9 fields, found 3/);
  });

  it('names a bad value before any key is compared', async () => {
    const r = await check(file(`${HEADER}\n${row('T-1')}\n2026-12-02,T-1,M1,VISA,sale,1O.00,0.15,9.85,EUR\n`));
    expect(r.error?.message).toMatch(/line 3, field gross_amount/);
  });
});
