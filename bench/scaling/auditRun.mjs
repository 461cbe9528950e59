// One transfer log audit over a fixture of transferLogFixture.mjs, in this process: the log read,
// its uploads followed, each matched to the ledger (transferAudit, what `audit` and `report
// evidence` run for a partner's transferLog), then its answer written as `audit` writes it (text,
// or with `--json` the JSON document) to /dev/null. Prints one JSON line: wall and CPU seconds, the
// uploads accounted, unmatched, and the heap's peak as V8 saw it.
// `--out FILE` writes the answer to FILE instead (to compare two builds' answers byte for byte).
// Usage: node --max-old-space-size=512 bench/scaling/auditRun.mjs DIR [--json] [--out FILE]   (after `npm run build`)
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { openLedger } from '../../dist/ledger/openLedger.js';
import { createWriteStream } from 'node:fs';
import { transferAudit } from '../../dist/report/arrivalAudit/transferAudit.js';
import { AccountedList } from '../../dist/report/arrivalAudit/accountedList.js';
import { accountedArrivalLine, auditLines } from '../../dist/report/auditText.js';
import { accountedArrivalJson } from '../../dist/cli/jsonOutput.js';
import { auditJsonPieces } from '../../dist/cli/auditCommand.js';
import { writeStreamed } from '../../dist/cli/streamedOutput.js';
import { notReady, sizeOf, uploadAt, name } from './transferLogFixture.mjs';

const dir = process.argv[2];
const json = process.argv.includes('--json');
const outAt = process.argv.indexOf('--out');
const outPath = outAt > 0 ? process.argv[outAt + 1] : '/dev/null';
const ledger = await openLedger(join(dir, 'ledger.sqlite'), { create: false, readOnly: true, timeoutMs: 5000 });
const uploads = Number((await import('node:fs')).readFileSync(join(dir, 'uploads.csv'), 'latin1').split('\n').length - 2);
let peakHeap = 0;
const sample = setInterval(() => (peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)), 50);
const partner = {
  partner: 'default',
  intake: '/in',
  archive: '/archive',
  duplicates: '/duplicates',
  rejected: '/rejected',
  kindSettings: {},
  pattern: 'settle_*.csv',
  ignore: [],
  readyMarker: undefined,
  transferLog: { files: [join(dir, 'uploads.csv')], root: '/', user: undefined, timeZone: 'UTC', clockSlackSeconds: 2 },
};
const intakeNow = async () => {
  const entries = new Map();
  for (let i = 0; i < uploads; i++) if (notReady(i)) entries.set(name(i), { size: sizeOf(i), mtimeMs: uploadAt(i) });
  return { entries };
};
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const accounted = new AccountedList(json ? { json: accountedArrivalJson } : { text: accountedArrivalLine });
const result = await transferAudit(ledger, [partner], intakeNow, { accounted });
// the answer as `audit` gives it, this check alone
const check = { name: 'every upload in the transfer log has a ledger outcome', discrepancies: [] };
const answer = { checks: [check], archiveCheck: 'sha256', discrepancies: result.unmatched, transferLog: result };
const out = createWriteStream(outPath);
if (json) await writeStreamed(auditJsonPieces(answer), { lines: false, end: '\n', stream: out });
else await writeStreamed(auditLines(answer), { lines: true, stream: out });
accounted.close();
const wall = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
clearInterval(sample);
await ledger.close();
console.log(
  JSON.stringify({
    uploads,
    arrivals: result.arrivals.count,
    loaded: result.counts.loaded ?? 0,
    unmatched: result.unmatched,
    wallSeconds: +wall.toFixed(2),
    cpuSeconds: +((cpu.user + cpu.system) / 1e6).toFixed(2),
    peakHeapMiB: Math.round(Math.max(peakHeap, getHeapStatistics().used_heap_size) / 2 ** 20),
    rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
  }),
);
