import { describe, expect, it } from 'vitest';
import type { AccountedArrival } from '../../src/report/arrivalAudit/accountArrivals.js';
import { AccountedList } from '../../src/report/arrivalAudit/accountedList.js';

/** An accounted upload of the list's tests: only the name, the message and whether it is unmatched matter here. */
const arrival = (i: number, unmatched = false): AccountedArrival => ({
  partner: 'adyen',
  name: `settle_${i}.csv`,
  path: `/in/settle_${i}.csv`,
  at: '2026-12-01T02:00:00.000Z',
  size: 100 + i,
  user: null,
  renamedFrom: null,
  log: { file: '/var/log/sftp.log', line: i + 1 },
  outcome: unmatched ? null : 'loaded',
  run: unmatched ? null : 'r-1',
  recordedAt: null,
  sha256: null,
  duplicateOf: null,
  reason: null,
  noRecord: unmatched ? 'removed_before_run' : null,
  afterWaiting: null,
  unmatched,
  // a name is the partner's to choose: a character past ASCII, and one more than a byte in UTF-8
  message: `adyen: settle_${i}.csv é€ ${unmatched ? 'UNMATCHED' : 'loaded by run r-1'}`,
});

const forms = {
  text: (a: AccountedArrival) => (a.unmatched ? null : `  ${a.message}`),
  json: (a: AccountedArrival) => JSON.stringify({ name: a.name, message: a.message }),
};

describe('the accounted uploads of an audit, written out as they are accounted', () => {
  it('gives each form back in the order added, leaving out what a form leaves out, in memory while small', () => {
    const list = new AccountedList(forms);
    for (let i = 0; i < 5; i++) list.add(arrival(i, i === 2));
    expect(list.count).toBe(5);
    expect([...list.lines('text')]).toEqual([0, 1, 3, 4].map((i) => `  adyen: settle_${i}.csv é€ loaded by run r-1`));
    expect([...list.lines('json')].map((line) => (JSON.parse(line) as { name: string }).name)).toEqual(
      [0, 1, 2, 3, 4].map((i) => `settle_${i}.csv`),
    );
    list.close();
  });

  it('past its limit, writes to a temporary file and reads it back whole and in order, lines across chunk ends included, then what is still in memory', () => {
    // a file after about 200 characters: most lines go to the file in several writes, the last few stay in memory
    const list = new AccountedList(forms, { spillAfter: 200 });
    const uploads = 30_000;
    for (let i = 0; i < uploads; i++) list.add(arrival(i));
    const text = [...list.lines('text')];
    expect(text).toHaveLength(uploads);
    expect(text.every((line, i) => line === `  adyen: settle_${i}.csv é€ loaded by run r-1`)).toBe(true);
    const json = [...list.lines('json')];
    expect(json.map((line) => (JSON.parse(line) as { name: string }).name)).toEqual(
      Array.from({ length: uploads }, (_, i) => `settle_${i}.csv`),
    );
    // read twice, the same
    expect([...list.lines('text')]).toEqual(text);
    list.close();
  });

  it('a form not asked for has no lines, and the uploads are still counted', () => {
    const list = new AccountedList({ text: forms.text });
    list.add(arrival(1));
    expect(list.count).toBe(1);
    expect([...list.lines('json')]).toEqual([]);
    list.close();
  });
});
