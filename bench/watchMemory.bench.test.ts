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
 * --poll. The watch process's own metrics file gives its resident memory and heap after every
 * cycle; the figure is the median of a window early on (after warm-up) against one at the end.
 * Not a timed test: it counts cycles, and memory is what it measures.
 */
const IDLE = Number(process.env.BENCH_WATCH_IDLE ?? '2000');
const EVERY = 100;
const WINDOW = 100;
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

async function sampleOf(path: string): Promise<Sample | undefined> {
  const text = await readFile(path, 'utf8').catch(() => '');
  const value = (series: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };
  const [idle, worked, rss, heap] = ['idle_cycles_total', 'worked_cycles_total', 'resident_memory_bytes', 'heap_used_bytes'].map((name) =>
    value(`settle_ingest_watch_${name}`),
  );
  if (idle === undefined || worked === undefined || rss === undefined || heap === undefined) return undefined;
  return { idle, worked, rss, heap };
}

it(`keeps watch's memory flat over ${IDLE.toLocaleString('en-US')} idle cycles and ${IDLE / EVERY} working ones`, async () => {
  const ws = await Workspace.create(server.url);
  const metrics = join(ws.root, 'settle.prom');
  const child = ws.startRunWith([
    'watch',
    '--intake',
    ws.intake,
    '--ledger',
    ws.ledger,
    '--stable-for',
    '0',
    '--metrics-file',
    metrics,
    '--poll',
    '0.01',
    '--rescan',
    '0.05',
  ]);
  const done = finished(child);
  const samples = new Map<number, Sample>();
  let dropped = 0;
  for (let last: Sample | undefined; !last || last.idle < IDLE || last.worked < IDLE / EVERY; ) {
    last = await sampleOf(metrics);
    if (last) samples.set(last.idle, last);
    // a file every EVERY idle cycles: the next cycle works it
    if (last && last.idle >= (dropped + 1) * EVERY && dropped < IDLE / EVERY && last.worked === dropped) {
      dropped++;
      const day = `2026-09-${String((dropped % 28) + 1).padStart(2, '0')}`;
      await ws.put(`settle_bench_${dropped}.csv`, sampleSettlement({ date: day, rows: 50, idPrefix: `WB${dropped}` }).text);
    }
    if (child.exitCode !== null) throw new Error(`watch ended early: ${(await done).stderr}`);
    await sleep(5);
  }
  child.kill('SIGTERM');
  const ended = await done;
  expect(ended.status).toBe(0);
  expect(ws.runs().filter((run) => run.loaded === 1)).toHaveLength(IDLE / EVERY);

  const inWindow = (from: number) => [...samples.values()].filter((s) => s.idle >= from && s.idle < from + WINDOW);
  const early = inWindow(2 * EVERY);
  const late = inWindow(IDLE - WINDOW);
  const rss = { early: median(early.map((s) => s.rss)) / MiB, late: median(late.map((s) => s.rss)) / MiB };
  const heap = { early: median(early.map((s) => s.heap)) / MiB, late: median(late.map((s) => s.heap)) / MiB };
  const line =
    `watch memory over ${IDLE} idle + ${IDLE / EVERY} working cycles (${samples.size} samples): ` +
    `RSS ${rss.early.toFixed(1)} → ${rss.late.toFixed(1)} MiB, heap used ${heap.early.toFixed(1)} → ${heap.late.toFixed(1)} MiB ` +
    `(medians of cycles ${2 * EVERY}-${2 * EVERY + WINDOW} and ${IDLE - WINDOW}-${IDLE})`;
  process.stdout.write(`${line}\n`);
  // flat: a leak of a few kB a cycle would be megabytes over these cycles
  expect(rss.late - rss.early).toBeLessThan(8);
  expect(heap.late - heap.early).toBeLessThan(4);
});
