import { spawn, spawnSync } from 'node:child_process';
import { gunzipSync } from 'node:zlib';
import { mkdir, mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { BIN, finished } from '../support/cli.js';
import { verifyUnitsWith } from '../support/unitsVerify.js';
import { until } from '../support/watchProcess.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OPS = join(ROOT, 'ops');
const has = (command: string, ...args: string[]) => spawnSync(command, args, { stdio: 'ignore' }).status === 0;
const hasSystemdAnalyze = has('systemd-analyze', '--version');
const hasLogrotate = has('logrotate', '--version');
// the sandbox below needs a mount namespace of its own: root, and a kernel and container that allow it
const canSandbox = process.getuid?.() === 0 && has('unshare', '--mount', '--propagation', 'private', 'true');
const SERVICES = ['settle-ingest.service', 'settle-ingest@.service'];
/** the long-running `watch`: a service of its own, no timer */
const WATCH = 'settle-ingest-watch.service';

const db = sharedFinanceDatabase();

/** The unit's hardening: its settings from ProtectSystem= to the end of [Service], comments left out. */
function sandboxOf(unit: string): string[] {
  const service = unit.slice(unit.indexOf('[Service]')).split(/^\[Install\]/m)[0]!;
  return service
    .slice(service.indexOf('\nProtectSystem='))
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** The unit's settings of one key, every line of it. */
function unitValues(unit: string, key: string): string[] {
  return unit
    .split('\n')
    .filter((line) => line.startsWith(`${key}=`))
    .map((line) => line.slice(key.length + 1));
}

const quote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

/**
 * `unshare`'s arguments for a command in the units' sandbox: a mount namespace of its own where
 * `writable` (the units' ReadWritePaths and PrivateTmp) are the only folders it may write, the
 * rest of the file system read-only (ProtectSystem=strict), and the command itself with no
 * capabilities and no new privileges (CapabilityBoundingSet=, NoNewPrivileges=yes). `exec` all
 * the way: the command keeps the pid `unshare` was started with, as a unit's main process.
 */
function sandboxArgs(writable: string[], command: string[]): string[] {
  const script = [
    ...writable.map((dir) => `mount --bind ${quote(dir)} ${quote(dir)}`),
    'mount -o remount,bind,ro /',
    `! touch ${quote(join(tmpdir(), 'settle-outside-the-sandbox'))} 2>/dev/null`,
    `exec setpriv --no-new-privs --bounding-set=-all --inh-caps=-all ${command.map(quote).join(' ')}`,
  ].join(' && ');
  return ['--mount', '--propagation', 'private', 'sh', '-c', script];
}

/**
 * The shipped ops/logrotate.d file pointed at `log` (for /var/log/settle-ingest) and this user
 * (for `su settle settle`), checked by `logrotate -d`; the function rotates for real (`-f`), with
 * `path` in front of PATH for the postrotate's commands.
 */
async function shippedLogrotate(dir: string, log: string): Promise<(path?: string) => { status: number | null; stderr: string }> {
  const conf = join(dir, 'logrotate.conf');
  const user = spawnSync('id', ['-un'], { encoding: 'utf8' }).stdout.trim();
  const group = spawnSync('id', ['-gn'], { encoding: 'utf8' }).stdout.trim();
  const text = await readFile(join(OPS, 'logrotate.d', 'settle-ingest'), 'utf8');
  expect(text).toContain('su settle settle');
  await writeFile(conf, text.replaceAll('/var/log/settle-ingest', log).replace('su settle settle', `su ${user} ${group}`), { mode: 0o644 });
  const state = join(dir, 'logrotate.state');
  const check = spawnSync('logrotate', ['-d', '-s', state, conf], { encoding: 'utf8' });
  expect(check.status, check.stderr).toBe(0);
  return (path) => {
    const env = { ...process.env, PATH: path ? `${path}:${process.env.PATH}` : process.env.PATH! };
    const r = spawnSync('logrotate', ['-f', '-s', state, conf], { encoding: 'utf8', env });
    return { status: r.status, stderr: r.stderr };
  };
}

const FINISHED_SUMMARY = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z run \S+ done: loaded=\d+ /;

describe('the systemd units in ops/', () => {
  it.skipIf(!hasSystemdAnalyze).each([...SERVICES, WATCH])('%s is rated at most 4.0 by systemd-analyze security --offline', (name) => {
    const r = spawnSync('systemd-analyze', ['security', '--offline=yes', join(OPS, name)], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const last = r.stdout.trim().split('\n').at(-1)!;
    const m = /Overall exposure level for \S+: (\d+\.\d+) /.exec(last);
    expect(m, last).not.toBeNull();
    expect(Number(m![1])).toBeLessThanOrEqual(4.0);
  });

  it('call the command by its name, which systemd finds where `npm install -g` puts it', async () => {
    for (const name of [...SERVICES, WATCH]) {
      expect(unitValues(await readFile(join(OPS, name), 'utf8'), 'ExecStart')[0], name).toMatch(/^settle-ingest (run|watch) /);
    }
  });

  // `npm config get prefix` is /usr for Node.js from NodeSource or Debian, /usr/local for the nodejs.org
  // tarball: the command is put in the mount namespace's /usr/bin or /usr/local/bin alone, by an
  // overlay on it, and the units are verified as shipped
  it.skipIf(!hasSystemdAnalyze || !canSandbox).each(['/usr/bin', '/usr/local/bin'])(
    'pass systemd-analyze verify with the command in %s, the template as an instance, with their timers',
    async (bin) => {
      const units = await mkdtemp(join(tmpdir(), 'settle-units-'));
      for (const name of [...SERVICES, WATCH, 'settle-ingest.timer', 'settle-ingest@.timer']) {
        await writeFile(join(units, name), await readFile(join(OPS, name), 'utf8'));
      }
      const installed = await mkdtemp(join(tmpdir(), 'settle-bin-'));
      await writeFile(join(installed, 'settle-ingest'), `#!/bin/sh\nexec '${process.execPath}' '${BIN}' "$@"\n`, { mode: 0o755 });
      for (const verified of verifyUnitsWith(units, installed, bin)) expect(verified, verified.stderr).toMatchObject({ status: 0 });
      // and without the command in either, verify says so: the check above is not vacuous
      const none = spawnSync('systemd-analyze', ['verify', join(units, WATCH)], { encoding: 'utf8' });
      expect(none.stderr).toContain('Command settle-ingest is not executable');
    },
  );

  it('write only where they say: the summary file and the log folder are among the ReadWritePaths', async () => {
    for (const name of SERVICES) {
      const unit = await readFile(join(OPS, name), 'utf8');
      expect(unitValues(unit, 'ProtectSystem')).toEqual(['strict']);
      const writable = unitValues(unit, 'ReadWritePaths').flatMap((v) => v.split(' ').map((p) => p.replace(/^-/, '')));
      expect(writable).toEqual(expect.arrayContaining(['/srv/settle', '/var/log/settle-ingest']));
      expect(unitValues(unit, 'WorkingDirectory')).toEqual(['/srv/settle']);
      const summary = /--summary-file (\S+)/.exec(unitValues(unit, 'ExecStart')[0]!)![1]!;
      expect(summary.startsWith('/var/log/settle-ingest/')).toBe(true);
      expect(unitValues(unit, 'MemoryDenyWriteExecute')).toEqual([]); // V8's JIT writes the code it runs
    }
  });

  it('settle-ingest-watch.service: a restarted service that finishes its file on stop, SIGHUP to reload, the same sandbox as a run', async () => {
    const watch = await readFile(join(OPS, WATCH), 'utf8');
    const run = await readFile(join(OPS, 'settle-ingest.service'), 'utf8');
    expect(unitValues(watch, 'Type')).toEqual(['exec']);
    expect(unitValues(watch, 'ExecStart')[0]).toMatch(/^settle-ingest watch --config \/etc\/settle-ingest\/config\.json /);
    expect(unitValues(watch, 'Restart')).toEqual(['on-failure']);
    expect(unitValues(watch, 'RestartSec')).toHaveLength(1);
    expect(unitValues(watch, 'ExecReload')).toEqual(['/bin/kill -HUP $MAINPID']);
    expect(unitValues(watch, 'KillSignal')).toEqual(['SIGTERM']);
    // a file's load and move fit in it: the CronJob gives a run the same before its kill
    expect(Number(/^(\d+)$/.exec(unitValues(watch, 'TimeoutStopSec')[0]!)![1])).toBeGreaterThanOrEqual(300);
    expect(unitValues(watch, 'WantedBy')).toEqual(['multi-user.target']);
    expect(unitValues(watch, 'WorkingDirectory')).toEqual(unitValues(run, 'WorkingDirectory'));
    expect(unitValues(watch, 'User')).toEqual(unitValues(run, 'User'));
    expect(sandboxOf(watch)).toEqual(sandboxOf(run));
    expect(sandboxOf(run)).toContain('ProtectSystem=strict');
  });

  it.skipIf(!canSandbox)(
    'a run still works in the sandbox they set: the file system read-only but its folders, no capabilities, no new privileges',
    async () => {
      const ws = await Workspace.create(db.url);
      const log = await mkdtemp(join(tmpdir(), 'settle-unit-log-'));
      const privateTmp = await mkdtemp(join(tmpdir(), 'settle-unit-tmp-'));
      await ws.put('settle_20261206_a01.csv', sampleSettlement({ date: '2026-12-06', rows: 3, idPrefix: 'UNIT' }).text);
      const run = [
        process.execPath,
        BIN,
        ...ws.runArgs(['--mode', 'scheduled', '--log-file', join(log, 'run.log'), '--summary-file', join(log, 'summary.log')]),
      ];
      // ReadWritePaths (the workspace stands for /srv/settle, `log` for /var/log/settle-ingest), PrivateTmp
      const r = spawnSync('unshare', sandboxArgs([ws.root, log, privateTmp], run), {
        cwd: ws.root,
        encoding: 'utf8',
        env: { PATH: process.env.PATH!, DATABASE_URL: ws.databaseUrl, TMPDIR: privateTmp },
      });
      expect(r.status, r.stderr).toBe(0);
      expect(await ws.files('archive')).toEqual(['settle_20261206_a01.csv']);
      expect((await readFile(join(log, 'summary.log'), 'utf8')).trim()).toMatch(FINISHED_SUMMARY);
    },
  );
});

describe('settle-ingest-watch.service in its sandbox, rotated by the shipped logrotate file', () => {
  it.skipIf(!canSandbox || !hasLogrotate)(
    "SIGHUP (the unit's ExecReload, from the postrotate) reopens every log file: two rotations with delaycompress lose no line, and watch never meets a closed descriptor",
    async () => {
      const ws = await Workspace.create(db.url);
      const log = await mkdtemp(join(tmpdir(), 'settle-unit-log-'));
      const privateTmp = await mkdtemp(join(tmpdir(), 'settle-unit-tmp-'));
      const config = join(ws.root, 'config.json');
      await writeFile(
        config,
        JSON.stringify({
          intake: ws.intake,
          ledger: ws.ledger,
          stableFor: 0,
          logFile: join(log, 'run.log'),
          summaryFile: join(log, 'summary.log'),
        }),
      );
      // the unit's command, its config and log folder this test's
      const unit = await readFile(join(OPS, WATCH), 'utf8');
      const start = unitValues(unit, 'ExecStart')[0]!.split(' ');
      expect(start.slice(0, 4)).toEqual(['settle-ingest', 'watch', '--config', '/etc/settle-ingest/config.json']);
      const command = [process.execPath, BIN, 'watch', '--config', config, '--poll', '0.2', '--rescan', '0.5'];
      const child = spawn('unshare', sandboxArgs([ws.root, log, privateTmp], command), {
        cwd: ws.root,
        env: { PATH: process.env.PATH!, DATABASE_URL: ws.databaseUrl, TMPDIR: privateTmp },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const done = finished(child);
      let stdout = '';
      child.stdout.on('data', (d) => (stdout += d));
      try {
        // systemd's part, played for logrotate: the unit is active while its main process lives, and `reload` runs its ExecReload
        const reload = unitValues(unit, 'ExecReload')[0]!.replace('$MAINPID', String(child.pid));
        expect(reload).toBe(`/bin/kill -HUP ${child.pid}`);
        const bin = await mkdtemp(join(tmpdir(), 'settle-systemctl-'));
        await writeFile(
          join(bin, 'systemctl'),
          [
            '#!/bin/sh',
            `[ "$*" = "--quiet is-active ${WATCH}" ] && exec kill -0 ${child.pid}`,
            `[ "$*" = "reload ${WATCH}" ] && exec ${reload}`,
            'echo "systemctl $*: not what the postrotate asks" >&2; exit 1',
          ].join('\n'),
          { mode: 0o755 },
        );
        const logrotate = await shippedLogrotate(ws.root, log);
        const night = async (n: number) => {
          const name = `settle_2026121${n}_a01.csv`;
          await ws.put(name, sampleSettlement({ date: `2026-12-1${n}`, rows: 2, idPrefix: `ROT${n}` }).text);
          await until(`file ${n} archived`, async () => (await ws.files('archive')).includes(name));
          await until(`run ${n} said`, () => stdout.split('\n').filter((line) => / done: loaded=1 /.test(line)).length === n);
        };
        const rotated = async (n: number) => {
          const r = logrotate(bin);
          expect(r.status, r.stderr).toBe(0);
          await until(
            `reopened after rotation ${n}`,
            () => stdout.split('\n').filter((line) => line === 'watch: log files reopened (SIGHUP)').length === n,
          );
        };
        await night(1);
        await rotated(1);
        await night(2);
        await rotated(2);
        await night(3);
        child.kill('SIGTERM');
        const ended = await done;
        expect(ended.status, ended.stderr).toBe(0);
        expect((await readdir(log)).sort()).toEqual([
          'run.log',
          'run.log.1',
          'run.log.2.gz',
          'summary.log',
          'summary.log.1',
          'summary.log.2.gz',
        ]);
        // every line whole and each night's in the file of its week: the first compressed, the second renamed, the third current
        const lines = async (name: string) => {
          const bytes = await readFile(join(log, name));
          const text = name.endsWith('.gz') ? gunzipSync(bytes).toString('utf8') : bytes.toString('utf8');
          return text
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line) as { event?: string; file?: string });
        };
        const runs = ws.runs().map((run) => run.run_id);
        expect(runs).toHaveLength(3);
        const weeks = [await lines('run.log.2.gz'), await lines('run.log.1'), await lines('run.log')];
        for (const [n, week] of weeks.entries()) {
          const loaded = week.filter((line) => line.event === 'loaded').map((line) => line.file);
          expect(loaded).toEqual([`settle_2026121${n + 1}_a01.csv`]);
          const ran = (week as { event?: string; run?: string }[]).filter((line) => line.event === 'run-finished').map((line) => line.run);
          expect(ran).toEqual([runs[n]]);
        }
        // the config reread at each reload too, and the summary lines rotated alike
        expect(stdout.split('\n').filter((line) => /^watch: config reread \(SIGHUP\)/.test(line))).toHaveLength(2);
        for (const name of ['summary.log', 'summary.log.1'])
          expect((await readFile(join(log, name), 'utf8')).trim()).toMatch(FINISHED_SUMMARY);
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    },
  );
});

describe('the cron line in ops/cron.d', () => {
  let ws: Workspace;
  let log: string;
  let cron: (() => { status: number | null; mail: string }) | undefined;

  beforeAll(async () => {
    ws = await Workspace.create(db.url);
    log = join(ws.root, 'log');
    await mkdir(log);
    const file = await readFile(join(OPS, 'cron.d', 'settle-ingest'), 'utf8');
    const lines = file.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
    const variables = Object.fromEntries(lines.filter((l) => /^[A-Z_]+=/.test(l)).map((l) => l.split(/=(.*)/s).slice(0, 2)));
    // where `npm install -g` puts the command (and often node) for the documented Node.js installs
    expect(variables.PATH!.split(':')).toEqual(expect.arrayContaining(['/usr/local/bin', '/usr/bin']));
    const job = lines.find((l) => /^\d/.test(l))!;
    expect(job).toMatch(/\$\(settle-ingest run /); // by its name, found on that PATH
    // the command after minute, hour, day, month, weekday and user, pointed at this test's folders and command
    const command = job
      .replace(/^(\S+\s+){6}/, '')
      .replaceAll('/srv/settle', ws.root)
      .replaceAll('/var/log/settle-ingest', log);
    // the installed command, as npm's bin link would be, first on the cron file's PATH
    const installed = await mkdtemp(join(tmpdir(), 'settle-bin-'));
    await writeFile(join(installed, 'settle-ingest'), `#!/bin/sh\nexec '${process.execPath}' '${BIN}' "$@"\n`, { mode: 0o755 });
    const config = join(ws.root, 'config.json');
    await writeFile(config, JSON.stringify({ intake: ws.intake, ledger: ws.ledger, stableFor: 0, logFile: join(log, 'run.log') }));
    cron = () => {
      // what cron mails is everything the command printed
      const r = spawnSync('/bin/sh', ['-c', command], {
        encoding: 'utf8',
        env: {
          PATH: `${installed}:${variables.PATH}:${process.env.PATH}`,
          SETTLE_CONFIG: config,
          DATABASE_URL: ws.databaseUrl,
          HOME: ws.root,
        },
      });
      return { status: r.status, mail: r.stdout + r.stderr };
    };
  });

  it('mails nothing after a good night; after a bad one the exit status, the rejected file and why, and the summary line, never the JSON log', async () => {
    await ws.put('settle_20261207_a01.csv', sampleSettlement({ date: '2026-12-07', rows: 2, idPrefix: 'CRON' }).text);
    expect(cron!()).toEqual({ status: 0, mail: '' });
    await ws.put('settle_20261208_a01.csv', 'this is no settlement file\n');
    const bad = cron!();
    expect(await ws.files('rejected')).toEqual(['settle_20261208_a01.csv']);
    const mail = bad.mail.trim().split('\n');
    expect(mail).toHaveLength(3);
    expect(mail[0]).toBe('settle-ingest exited 1:');
    expect(mail[1]).toMatch(/^rejected settle_20261208_a01\.csv: line 1: header lacks the columns "settlement_date", /);
    expect(mail[2]).toMatch(/^run \S+ done: loaded=0 .*rejected=1/);
    // each night's lines in summary.log, with its time
    const summary = (await readFile(join(log, 'summary.log'), 'utf8')).trim().split('\n');
    expect(summary).toHaveLength(3);
    expect(summary[0]).toMatch(FINISHED_SUMMARY);
    expect(summary[1]).toMatch(/^\S+Z rejected settle_20261208_a01\.csv: line 1: /);
    expect(summary[2]).toMatch(FINISHED_SUMMARY);
  });

  it.skipIf(!hasLogrotate)('ops/logrotate.d rotates summary.log and run.log by renaming, and the next run starts them anew', async () => {
    const logrotate = await shippedLogrotate(ws.root, log);
    const rotate = logrotate();
    expect(rotate.status, rotate.stderr).toBe(0);
    expect((await readdir(log)).sort()).toEqual(['run.log.1', 'summary.log.1']);

    await ws.put('settle_20261209_a01.csv', sampleSettlement({ date: '2026-12-09', rows: 2, idPrefix: 'ROTA' }).text);
    expect(cron!()).toEqual({ status: 0, mail: '' });
    expect((await readdir(log)).sort()).toEqual(['run.log', 'run.log.1', 'summary.log', 'summary.log.1']);
    expect((await readFile(join(log, 'summary.log'), 'utf8')).trim().split('\n')).toHaveLength(1);
    // the two nights before the rotation: a line, then a rejected file's and its night's
    expect((await readFile(join(log, 'summary.log.1'), 'utf8')).trim().split('\n')).toHaveLength(3);
  });
});
