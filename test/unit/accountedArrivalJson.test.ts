import { describe, expect, it } from 'vitest';
import type { AccountedArrival } from '../../src/report/arrivalAudit/accountArrivals.js';
import { accountedArrivalJson, snakeKeys } from '../../src/cli/jsonOutput.js';
import { printableJson } from '../../src/report/printable.js';

/** What `--json` wrote for an accounted upload before it had its own encoder: the generic conversion and JSON.stringify. */
const generic = (a: AccountedArrival) => printableJson(snakeKeys(a));

/** Names a partner may send: quotes, backslashes, controls, DEL and C1, format and bidi characters, separators, a lone surrogate, astral. */
const ODD = [
  'settle "quoted" \\ back.csv',
  'tab\tnew\nline\rcr\u0000nul\u001besc.csv',
  'del\u007f c1\u0085\u009f.csv',
  'zw\u200b bidi\u202e rtl\u2066.csv',
  'ls\u2028ps\u2029.csv',
  'lone\ud800surrogate\udfff.csv',
  'é€ 😀 \u{1f600}.csv',
  '\ufffd.csv',
  '',
];

function arrival(i: number): AccountedArrival {
  const odd = ODD[i % ODD.length]!;
  const waiting = i % 3 === 0;
  return {
    partner: i % 2 ? 'adyen' : `p${odd}`,
    name: odd,
    path: `/in/${odd}`,
    at: '2026-12-01T02:00:00.000Z',
    size: [0, 1, 2 ** 53 - 1, 1.5, Number.NaN, -0][i % 6]!,
    user: i % 4 ? null : `user ${odd}`,
    renamedFrom: i % 5 ? null : `/in/${odd}.part`,
    log: { file: `/var/log/${odd}.log`, line: i + 1 },
    outcome: waiting ? 'not_ready' : i % 7 === 1 ? null : 'skipped',
    run: i % 7 === 1 ? null : `r-${odd}`,
    recordedAt: i % 7 === 1 ? null : '2026-12-01T02:00:01.000Z',
    sha256: i % 7 === 1 ? null : 'a'.repeat(64),
    duplicateOf: i % 2 ? { name: `first ${odd}`, run: i % 4 === 1 ? null : `r-${odd}` } : null,
    reason: i % 3 === 2 ? `reason: ${odd}` : null,
    noRecord: i % 7 === 1 ? 'removed_before_run' : null,
    afterWaiting: waiting ? 'still_in_intake' : null,
    unmatched: i % 7 === 1,
    message: `adyen: ${odd} (${i} bytes): "${odd}" \u2028 ${i % 7 === 1 ? 'UNMATCHED' : 'skipped'}`,
  };
}

describe("an accounted upload's JSON object", () => {
  it('is byte for byte what the generic conversion wrote, whatever characters its strings hold', () => {
    for (let i = 0; i < 200; i++) {
      const a = arrival(i);
      expect(accountedArrivalJson(a), `upload ${i}`).toBe(generic(a));
    }
  });

  it('is the same for an upload of printable ASCII alone (written without the escaper), and for one string of another character beside it', () => {
    /** every string of the upload cut to printable ASCII without quotes or backslashes */
    const asIs = (value: unknown): unknown =>
      typeof value === 'string'
        ? value.replace(/[^\x20-\x7e]|["\\]/g, '')
        : value !== null && typeof value === 'object'
          ? Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, asIs(inner)]))
          : value;
    const fields = ['partner', 'name', 'path', 'user', 'renamedFrom', 'run', 'reason', 'message'] as const;
    for (let i = 0; i < 200; i++) {
      const plain = asIs(arrival(i)) as AccountedArrival;
      expect(accountedArrivalJson(plain), `plain upload ${i}`).toBe(generic(plain));
      // one field given one character to escape or make printable, the upload after it plain again
      const field = fields[i % fields.length]!;
      const odd = {
        ...plain,
        [field]: `${plain[field] ?? ''}${['"', '\\', '\u0007', '\u007f', '\u0085', '\u202e', 'é', '\ud800'][i % 8]}`,
      };
      expect(accountedArrivalJson(odd), `upload ${i} with ${field} odd`).toBe(generic(odd));
    }
  });

  it('has every field of an accounted upload, in snake_case, and parses back to its values', () => {
    const a = arrival(3);
    const parsed = JSON.parse(accountedArrivalJson(a)) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(Object.keys(snakeKeys(a) as object));
    expect(parsed.name).toBe(a.name);
    expect(parsed.message).toBe(a.message);
  });
});
