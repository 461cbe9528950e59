// One transfer log audit over a fixture of transferLogFixture.mjs, in this process: the log read,
// its uploads followed, each matched to the ledger (transferAudit, what `audit` and `report
// evidence` run for a partner's transferLog). Prints one JSON line: wall and CPU seconds, the
// uploads accounted, unmatched, and the heap's peak as V8 saw it.
// Usage: node --max-old-space-size=512 bench/scaling/auditRun.mjs DIR   (after `npm run build`)
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { openLedger } from '../../dist/ledger/openLedger.js';
import { transferAudit } from '../../dist/report/arrivalAudit/transferAudit.js';
import { notReady, sizeOf, uploadAt, name } from './transferLogFixture.mjs';

const dir = process.argv[2];
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
const result = await transferAudit(ledger, [partner], intakeNow);
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
