/** Deterministic sample settlement files for the demo and the tests. */

export const HEADER = 'settlement_date,transaction_id,merchant_id,card_brand,transaction_type,gross_amount,fee_amount,net_amount,currency';

const BRANDS = ['VISA', 'MASTERCARD', 'AMEX'];
const TYPES = ['sale', 'sale', 'sale', 'refund'];
const CURRENCIES = ['EUR', 'EUR', 'USD', 'GBP'];

/** Integer cents as a decimal string: money is built and printed without floating point. */
export function cents(amountCents: bigint): string {
  const neg = amountCents < 0n;
  const abs = neg ? -amountCents : amountCents;
  const s = `${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`;
  return neg ? `-${s}` : s;
}

export interface SampleOptions {
  date: string; // YYYY-MM-DD
  rows: number;
  /** prefix of transaction ids, so that different files never share a natural key */
  idPrefix: string;
  eol?: '\n' | '\r\n';
}

export interface SampleFile {
  text: string;
  /** the exact sum of net_amount, as a decimal string */
  netTotal: string;
}

export function sampleSettlement(sampleOptions: SampleOptions): SampleFile {
  const eol = sampleOptions.eol ?? '\n';
  const lines = [HEADER];
  let total = 0n;
  let seed = [...sampleOptions.idPrefix].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7);
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
  for (let i = 1; i <= sampleOptions.rows; i++) {
    const type = TYPES[next() % TYPES.length]!;
    const gross = BigInt(100 + (next() % 500_000)) * (type === 'refund' ? -1n : 1n);
    const fee = (gross * 15n) / 1000n;
    const net = gross - fee;
    total += net;
    lines.push(
      [
        sampleOptions.date,
        `${sampleOptions.idPrefix}-${String(i).padStart(7, '0')}`,
        `M${String((next() % 9000) + 1000)}`,
        BRANDS[next() % BRANDS.length],
        type,
        cents(gross),
        cents(fee),
        cents(net),
        CURRENCIES[next() % CURRENCIES.length],
      ].join(','),
    );
  }
  return { text: lines.join(eol) + eol, netTotal: cents(total) };
}
