import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeConfig } from '../../bench/scaling/configFixture.mjs';
import { effectiveConfig } from '../../src/cli/configCommand.js';
import { resolvePartners } from '../../src/config/settings.js';

/** A config file of `count` partners, each with its own intake, a layout written out, and the deliveries it owes (bench/scaling/configFixture.mjs). */
const configOf = (count: number): string => writeConfig(mkdtempSync(join(tmpdir(), 'settle-scale-')), count);

/** The least CPU time of a few turns of `work` (the least is the one the machine disturbed least). */
function leastCpuMs(work: () => void, turns = 3): number {
  let least = Infinity;
  for (let i = 0; i < turns; i++) {
    const before = process.cpuUsage();
    work();
    const used = process.cpuUsage(before);
    least = Math.min(least, (used.user + used.system) / 1000);
  }
  return least;
}

describe('reading a config file grows in step with its partners', () => {
  // a ratio of two sizes in one run, not a time limit: linear is 4x for 4x the partners (up to ~6x
  // as the larger outgrows the processor's caches), the square 16x
  const small = 1_000;
  const large = 4 * small;
  const smallConfig = configOf(small);
  const largeConfig = configOf(large);

  it('every command reads it (resolvePartners): 4x the partners cost under 8x the time', () => {
    const read = (config: string, count: number) => () => expect(resolvePartners({ config }, {}).partners).toHaveLength(count);
    // the first readings load the layouts and the holiday rules, and warm the compiler
    read(smallConfig, small)();
    read(largeConfig, large)();
    const ratio = leastCpuMs(read(largeConfig, large), 2) / leastCpuMs(read(smallConfig, small), 2);
    expect(ratio).toBeLessThan(8);
  }, 60_000);

  it("`config` shows every partner's settings (effectiveConfig): 4x the partners cost under 8x the time", () => {
    const show = (config: string, count: number) => () =>
      expect(effectiveConfig({ config }, {}).filter((s) => s.setting === 'intake')).toHaveLength(count);
    show(smallConfig, small)();
    const ratio = leastCpuMs(show(largeConfig, large), 2) / leastCpuMs(show(smallConfig, small), 2);
    expect(ratio).toBeLessThan(8);
  }, 60_000);
});
