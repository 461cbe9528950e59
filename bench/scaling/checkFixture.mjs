// A settlement file of N rows in the default layout (the demo's rows, in blocks of 200,000), whose
// last row repeats the natural key of its first (line 2): `check` must name both lines.
// Usage: node bench/scaling/checkFixture.mjs FILE ROWS   (after `npm run build`)
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { sampleSettlement } from '../../dist/demo/sampleSettlement.js';

const [file, count] = process.argv.slice(2);
const rows = Number(count);
const out = createWriteStream(file);
const block = 200_000;
let firstRow = '';
for (let done = 0, n = 0; done < rows - 1; done += block, n++) {
  const text = sampleSettlement({ date: '2026-09-01', rows: Math.min(block, rows - 1 - done), idPrefix: `B${n}` }).text;
  const body = text.slice(text.indexOf('\n') + 1);
  if (n === 0) firstRow = body.slice(0, body.indexOf('\n') + 1);
  if (!out.write(n === 0 ? text : body)) await once(out, 'drain');
}
out.write(firstRow);
out.end();
await once(out, 'finish');
console.log(`${file}: ${rows} rows, the last repeating line 2's key`);
