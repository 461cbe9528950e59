// Reading a config file of N partners (issue 44: 20,000 in under a second), in a temp folder:
// - in this process, TURNS turns of what every command does first: resolvePartners (the file
//   parsed, every partner's settings resolved and checked, the shared-folder and shared-table
//   checks), and of `config`'s rows over it (effectiveConfig);
// - the built CLI from exec to exit, as cron starts it (bin/settle-ingest.js): `--version` (the
//   process's start alone), `config --partner partner-0` (the start, the whole read and its
//   checks, one partner printed: what `run` pays before its first partner), `config` (every
//   partner's settings: 33 lines each) and `config --json`.
// Wall and CPU (user + system) of each; on a shared machine CPU is the figure to compare.
// --folders makes each partner's intake first, so the read looks at folders that are there.
// Usage: node bench/scaling/configRead.mjs [PARTNERS] [TURNS] [--folders]   (after `npm run build`)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { effectiveConfig } from '../../dist/cli/configCommand.js';
import { resolvePartners } from '../../dist/config/settings.js';
import { writeConfig } from './configFixture.mjs';

const [partners = 20_000, turns = 5] = process.argv
  .slice(2)
  .filter((arg) => !arg.startsWith('--'))
  .map(Number);
const folders = process.argv.includes('--folders');
const bin = fileURLToPath(new URL('../../bin/settle-ingest.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'settle-config-read-'));
const config = writeConfig(dir, partners, { folders });

const seconds = (list) => list.map((s) => s.toFixed(2));
const least = (list) => Math.min(...list);
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const line = (name, wall, cpu, more = '') =>
  console.log(
    `  ${name.padEnd(28)} CPU ${least(cpu).toFixed(2)} s least, ${median(cpu).toFixed(2)} median (${seconds(cpu).join(' ')}); ` +
      `wall ${least(wall).toFixed(2)} s least, ${median(wall).toFixed(2)} median${more}`,
  );

console.log(
  `${partners} partners${folders ? ' (their intakes made)' : ''}, config ${(statSync(config).size / 2 ** 20).toFixed(1)} MiB, ` +
    `Node.js ${process.version}, load average ${loadavg()[0].toFixed(1)} at the start`,
);
console.log(`in this process, ${turns} turns (the first also loads the layouts and holiday rules):`);
for (const [name, read] of [
  ['resolvePartners', () => resolvePartners({ config }, {}).partners.length],
  ['effectiveConfig', () => effectiveConfig({ config }, {}).length],
]) {
  const wall = [];
  const cpu = [];
  for (let turn = 0; turn < turns; turn++) {
    const cpuBefore = process.cpuUsage();
    const wallBefore = performance.now();
    read();
    const used = process.cpuUsage(cpuBefore);
    wall.push((performance.now() - wallBefore) / 1000);
    cpu.push((used.user + used.system) / 1e6);
  }
  line(name, wall, cpu);
}

console.log(`the CLI, exec to exit, ${Math.min(turns, 3)} turns each (stdout to /dev/null; GNU time):`);
for (const args of [
  ['--version'],
  ['config', '--config', config, '--partner', 'partner-0'],
  ['config', '--config', config],
  ['config', '--json', '--config', config],
]) {
  const wall = [];
  const cpu = [];
  let rss = 0;
  for (let turn = 0; turn < Math.min(turns, 3); turn++) {
    const timeFile = join(dir, 'time');
    const run = spawnSync('/usr/bin/time', ['-f', '%e %U %S %M', '-o', timeFile, bin, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    if (run.status !== 0) throw new Error(`${args.join(' ')}: exit ${run.status}: ${run.stderr}`);
    const [e, u, s, m] = readFileSync(timeFile, 'utf8').trim().split('\n').at(-1).split(' ').map(Number);
    wall.push(e);
    cpu.push(u + s);
    rss = Math.max(rss, m);
  }
  line(args.filter((arg) => arg !== config && arg !== '--config').join(' '), wall, cpu, `, peak RSS ${(rss / 1024).toFixed(0)} MiB`);
}
rmSync(dir, { recursive: true, force: true });
