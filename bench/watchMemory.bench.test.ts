import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sampleSettlement } from '../src/demo/sampleSettlement.js';
import { finished } from '../test/support/cli.js';
import { assertFreshBuild } from '../test/support/freshBuild.js';
import { Workspace } from '../test/support/workspace.js';
import { median, startBenchServer, type BenchServer } from './benchSupport.js';

/**
 * `watch` over many cycles: BENCH_WATCH_IDLE idle cycles (2,000 by default) with a file dropped
 * every 100 of them (each a working cycle: gate, claim, load, move, a run recorded), on a short
 * --poll. The figure is the median of the resident memory and of the heap (after a full
 * collection) over a window early on, after warm-up, against one at the end.
 * Not a timed test: it counts cycles, and memory is what it measures.
 */
const IDLE = Number(process.env.BENCH_WATCH_IDLE ?? '2000');
const EVERY = 100;
const WINDOW = 300;
const MiB = 1024 * 1024;

let server: BenchServer;
beforeAll(async () => {
  assertFreshBuild();
  server = await startBenchServer('shipped');
});
afterAll(async () => server?.stop());

interface Sample {
  idle: number;
  worked: number;
  rss: number;
  heap: number;
}

/**
 * The watch command run in a process of its own with `--expose-gc`, from the built modules
 * (dist/, what the bundle is made of): every 200 ms it collects garbage and appends one line,
 * `IDLE WORKED RSS HEAP`, read from the watch's own metrics file and the process. A heap read
 * without a collection first measures V8's laziness, not what the loop keeps.
 */
const DRIVER = `
import { appendFileSync, readFileSync } from 'node:fs';
const [samples, metrics, ...args] = process.argv.slice(1);
const { settleProgram } = await import(${JSON.stringify(new URL('../dist/cli/index.js', import.meta.url).href)});
const counter = (text, name) => Number(new RegExp('settle_ingest_watch_' + name + '_cycles_total ([0-9]+)').exec(text)?.[1] ?? NaN);
setInterval(() => {
  globalThis.gc();
  const text = (() => { try { return readFileSync(metrics, 'utf8'); } catch { return ''; } })();
  const { rss, heapUsed } = process.memoryUsage();
  appendFileSync(samples, [counter(text, 'idle'), counter(text, 'worked'), rss, heapUsed].join(' ') + '\\n');
}, 200).unref();
await settleProgram(() => undefined).parseAsync(['node', 'settle-ingest', ...args]);
`;

async function samplesOf(path: string): Promise<Sample[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text
    .split('\n')
    .map((line) => line.split(' ').map(Number))
    .filter((fields) => fields.length === 4 && fields.every(Number.isFinite))
    .map(([idle, worked, rss, heap]) => ({ idle: idle!, worked: worked!, rss: rss!, heap: heap! }));
}

it(`keeps watch's memory flat over ${IDLE.toLocaleString('en-US')} idle cycles and ${IDLE / EVERY} working ones`, async () => {
  const ws = await Workspace.create(server.url);
  const metrics = join(ws.root, 'settle.prom');
  const samplesFile = join(ws.root, 'samples.txt');
  const watchArgs = ['watch', '--intake', ws.intake, '--ledger', ws.ledger, '--stable-for', '0', '--metrics-file', metrics];
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--input-type=module', '-e', DRIVER, samplesFile, metrics, ...watchArgs, '--poll', '0.01', '--rescan', '0.05'],
    { env: { PATH: process.env.PATH ?? '', DATABASE_URL: server.url }, cwd: ws.root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const done = finished(child);
  let dropped = 0;
  for (let last: Sample | undefined; !last || last.idle < IDLE || last.worked < IDLE / EVERY;) {
    last = (await samplesOf(samplesFile)).at(-1);
    // a file every EVERY idle cycles: the next cycle works it
    if (last && last.idle >= (dropped + 1) * EVERY && dropped < IDLE / EVERY && last.worked === dropped) {
      dropped++;
      const day = `2026-09-${String((dropped % 28) + 1).padStart(2, '0')}`;
      await ws.put(`settle_bench_${dropped}.csv`, sampleSettlement({ date: day, rows: 50, idPrefix: `WB${dropped}` }).text);
    }
    if (child.exitCode !== null) throw new Error(`watch ended early: ${(await done).stderr}`);
    await sleep(50);
  }
  child.kill('SIGTERM');
  const ended = await done;
  expect(ended.status).toBe(0);
  expect(ws.runs().filter((run) => run.loaded === 1)).toHaveLength(IDLE / EVERY);

  const samples = await samplesOf(samplesFile);
  const inWindow = (from: number) => samples.filter((sample) => sample.idle >= from && sample.idle < from + WINDOW);
  const early = inWindow(2 * EVERY);
  const late = inWindow(IDLE - WINDOW);
  const rss = { early: median(early.map((s) => s.rss)) / MiB, late: median(late.map((s) => s.rss)) / MiB };
  const heap = { early: median(early.map((s) => s.heap)) / MiB, late: median(late.map((s) => s.heap)) / MiB };
  const line =
    `watch memory over ${IDLE} idle + ${IDLE / EVERY} working cycles (${samples.length} samples, each after a full collection): ` +
    `RSS ${rss.early.toFixed(1)} → ${rss.late.toFixed(1)} MiB, heap used ${heap.early.toFixed(1)} → ${heap.late.toFixed(1)} MiB ` +
    `(medians of cycles ${2 * EVERY}-${2 * EVERY + WINDOW} and ${IDLE - WINDOW}-${IDLE})`;
  process.stdout.write(`${line}\n`);
  // flat: a leak of a few kB a cycle would be megabytes over these cycles
  expect(rss.late - rss.early).toBeLessThan(8);
  expect(heap.late - heap.early).toBeLessThan(4);
});
