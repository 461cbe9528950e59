import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

// bin/codeCache.cjs as the bin uses it, in a process of its own (it hooks Node's loader and writes at exit)
const LOADER = fileURLToPath(new URL('../../bin/codeCache.cjs', import.meta.url));

let root = '';
let bundle = '';
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'code-cache-'));
  bundle = join(root, 'bundle');
  mkdirSync(bundle);
  writeBundle('one');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A two-chunk bundle whose entry answers `word`: every variant has the same length, as V8's own check sees it. */
function writeBundle(word: string) {
  writeFileSync(join(bundle, 'cli.cjs'), `const part = require('./part.cjs');\nexports.answer = () => part.word() + '-${word}';\n`);
  writeFileSync(join(bundle, 'part.cjs'), `exports.word = () => 'part';\n`);
}

/** One process: the bundle loaded through the loader, its answer and what each chunk found. */
function load(env: Record<string, string>, command = 'run'): { answer: string; found: Record<string, string> } {
  const script = `
    const c = require(${JSON.stringify(LOADER)});
    const { answer } = c.requireBundle(${JSON.stringify(bundle)}, 'cli.cjs');
    console.log(JSON.stringify({ answer: answer(), found: Object.fromEntries(c.loads.map((l) => [l.chunk, l.found])) }));`;
  const out = execFileSync(process.execPath, ['-e', script, 'settle-ingest', command], {
    env: { PATH: process.env.PATH ?? '', HOME: join(root, 'home'), ...env },
    encoding: 'utf8',
  });
  return JSON.parse(out) as { answer: string; found: Record<string, string> };
}

const caches = (folder: string) => readdirSync(folder).sort();

describe('the code cache of the bundle', () => {
  it('is written at the first run into a private folder and used by the next', () => {
    expect(load({})).toEqual({ answer: 'part-one', found: { cli: 'none', part: 'none' } });
    const folder = join(root, 'home', '.cache', 'settle-ingest');
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    const files = caches(folder);
    expect(files).toHaveLength(2);
    expect(files.every((f) => /^(cli|part)-[0-9a-f]{16}-run\.v8cache$/.test(f))).toBe(true);
    for (const f of files) expect(statSync(join(folder, f)).mode & 0o777).toBe(0o600);
    expect(load({})).toEqual({ answer: 'part-one', found: { cli: 'used', part: 'used' } });
  });

  it('caches a chunk required later when it is one of the late chunks (holidays), and leaves any other to Node', () => {
    // the entry requires its late chunks only when asked, as src/calendar/holidays.ts does
    writeFileSync(
      join(bundle, 'cli.cjs'),
      `exports.answer = () => require('./holidays.cjs').word() + '-' + require('./sftp.cjs').word();\n`,
    );
    writeFileSync(join(bundle, 'holidays.cjs'), `exports.word = () => 'holidays';\n`);
    writeFileSync(join(bundle, 'sftp.cjs'), `exports.word = () => 'sftp';\n`);
    expect(load({})).toEqual({ answer: 'holidays-sftp', found: { cli: 'none', holidays: 'none' } });
    const folder = join(root, 'home', '.cache', 'settle-ingest');
    expect(caches(folder).map((f) => f.split('-')[0])).toEqual(['cli', 'holidays']);
    expect(load({})).toEqual({ answer: 'holidays-sftp', found: { cli: 'used', holidays: 'used' } });
  });

  it('leaves no temporary behind when its cache cannot be put in place, and the run still answers', () => {
    const folder = join(root, 'home', '.cache', 'settle-ingest');
    load({});
    const [cliCache] = caches(folder).filter((f) => f.startsWith('cli-'));
    // the chunk's cache name taken by a folder that is not empty: the rename over it fails
    rmSync(join(folder, cliCache!));
    mkdirSync(join(folder, cliCache!));
    writeFileSync(join(folder, cliCache!, 'x'), '');
    // a folder at a cache's name is no cache (refused, said once); what the run compiled cannot be put there
    expect(load({})).toEqual({ answer: 'part-one', found: { cli: 'refused', part: 'used' } });
    expect(caches(folder).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('keeps a command’s help apart from its runs: the cache a help writes is never the command’s', () => {
    const { commandOf } = createRequire(import.meta.url)(LOADER) as { commandOf(argv: string[]): string };
    const argv = (...args: string[]) => ['node', 'settle-ingest', ...args];
    expect(commandOf(argv('run', '--json'))).toBe('run');
    expect(commandOf(argv('status', '--help'))).toBe('help');
    expect(commandOf(argv('-h'))).toBe('help');
    expect(commandOf(argv('--version'))).toBe('help');
    expect(commandOf(argv('--config', 'x.json', 'run'))).toBe('other');
    expect(commandOf(argv())).toBe('other');
  });

  it('is kept per command', () => {
    load({});
    expect(load({}, 'status').found).toEqual({ cli: 'none', part: 'none' });
    expect(load({}, 'status').found).toEqual({ cli: 'used', part: 'used' });
    expect(caches(join(root, 'home', '.cache', 'settle-ingest'))).toHaveLength(4);
  });

  it('is never offered to a changed chunk of the same length, and the old one goes', () => {
    load({});
    writeBundle('two');
    // the changed entry compiles afresh and answers as it now reads; the unchanged chunk keeps its cache
    expect(load({})).toEqual({ answer: 'part-two', found: { cli: 'none', part: 'used' } });
    const files = caches(join(root, 'home', '.cache', 'settle-ingest'));
    expect(files.filter((f) => f.startsWith('cli-'))).toHaveLength(1);
    expect(load({}).found).toEqual({ cli: 'used', part: 'used' });
  });

  it('compiles afresh past a cache V8 refuses, and writes a good one', () => {
    load({});
    const folder = join(root, 'home', '.cache', 'settle-ingest');
    for (const f of caches(folder)) writeFileSync(join(folder, f), Buffer.alloc(4096, 7));
    expect(load({})).toEqual({ answer: 'part-one', found: { cli: 'rejected', part: 'rejected' } });
    expect(load({}).found).toEqual({ cli: 'used', part: 'used' });
  });

  it('takes SETTLE_CODE_CACHE, then CACHE_DIRECTORY, then XDG_CACHE_HOME', () => {
    const own = join(root, 'own');
    load({ SETTLE_CODE_CACHE: own, CACHE_DIRECTORY: join(root, 'systemd'), XDG_CACHE_HOME: join(root, 'xdg') });
    expect(caches(own)).toHaveLength(2);
    load({ CACHE_DIRECTORY: join(root, 'systemd'), XDG_CACHE_HOME: join(root, 'xdg') });
    expect(caches(join(root, 'systemd'))).toHaveLength(2);
    load({ XDG_CACHE_HOME: join(root, 'xdg') });
    expect(caches(join(root, 'xdg', 'settle-ingest'))).toHaveLength(2);
  });

  it('is off when asked, and in a folder others may write or behind a link: nothing read, nothing written', () => {
    expect(load({ SETTLE_CODE_CACHE: 'off' })).toEqual({ answer: 'part-one', found: { cli: 'off', part: 'off' } });
    expect(readdirSync(root)).not.toContain('home');

    const shared = join(root, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    expect(load({ SETTLE_CODE_CACHE: shared }).found).toEqual({ cli: 'off', part: 'off' });
    expect(caches(shared)).toEqual([]);

    const real = join(root, 'real');
    mkdirSync(real, { mode: 0o700 });
    symlinkSync(real, join(root, 'link'));
    expect(load({ SETTLE_CODE_CACHE: join(root, 'link') }).found).toEqual({ cli: 'off', part: 'off' });
    expect(caches(real)).toEqual([]);

    // a relative folder would depend on where cron starts the command
    expect(load({ SETTLE_CODE_CACHE: 'relative/cache' }).found).toEqual({ cli: 'off', part: 'off' });
  });
});

// The three attacks of issue 44, each placed exactly (no timing): another user's code must never
// run as the operator. The operator and the attacker are two unprivileged uids of their own (the
// processes run under setpriv), which needs root to arrange, as the sandbox tests do.
const OPERATOR = 4241;
const ATTACKER = 4242;
const TEAM = 4250;
const asRoot = process.getuid?.() === 0;

/** Debian's python3 (not a shim in root's home, which the two users cannot run): it has renameat2 through ctypes. */
const PYTHON = '/usr/bin/python3';
/** renameat2(RENAME_EXCHANGE): the two paths trade places in one step, as the attacker's loop did. */
const EXCHANGE = [
  'import ctypes, os, sys',
  'libc = ctypes.CDLL(None, use_errno=True)',
  'if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2) != 0:',
  '    e = ctypes.get_errno(); raise OSError(e, os.strerror(e))',
].join('\n');

interface Start {
  answer: string;
  found: Record<string, string>;
  /** the lines the start wrote on stderr */
  warnings: string[];
}

/**
 * One start of the bundle as `uid` (in `groups`), its cache in `folder`; `exchange`: two paths
 * the start trades (renameat2) once its cache folder is opened and checked, before any cache is read.
 */
function startAs(uid: number, folder: string, opts: { groups?: number[]; exchange?: [string, string]; home?: string } = {}): Start {
  const hook = opts.exchange
    ? `afterFolderOpened: () => require('node:child_process').execFileSync(${JSON.stringify(PYTHON)}, ['-c', ${JSON.stringify(EXCHANGE)}, ...${JSON.stringify(opts.exchange)}]),`
    : '';
  const script = `
    const c = require(${JSON.stringify(LOADER)});
    const { answer } = c.requireBundle(${JSON.stringify(bundle)}, 'cli.cjs', { ${hook} });
    console.log(JSON.stringify({ answer: answer(), found: Object.fromEntries(c.loads.map((l) => [l.chunk, l.found])) }));`;
  const groups = opts.groups?.length ? ['--groups', opts.groups.join(',')] : ['--clear-groups'];
  const out = spawnSync(
    'setpriv',
    ['--reuid', String(uid), '--regid', String(uid), ...groups, process.execPath, '-e', script, 'settle-ingest', 'run'],
    { env: { PATH: process.env.PATH ?? '', HOME: opts.home ?? join(root, 'nohome'), SETTLE_CODE_CACHE: folder }, encoding: 'utf8' },
  );
  if (out.status !== 0) throw new Error(`the start failed (${out.status}): ${out.stderr}`);
  return { ...(JSON.parse(out.stdout) as Omit<Start, 'warnings'>), warnings: out.stderr.split('\n').filter(Boolean) };
}

/** A folder made by root, then given to `uid` (and `gid`) with `mode`. */
function folderOf(path: string, uid: number, mode: number, gid = uid): string {
  mkdirSync(path);
  chownSync(path, uid, gid);
  chmodSync(path, mode);
  return path;
}

/**
 * The attacker's cache files: V8's cache of the bundle changed to answer `evil` (a source of the
 * same length, which is all V8 checks), named as the operator's cache of the real bundle is named.
 * Returns the operator's names with the attacker's bytes.
 */
function evilCaches(): Map<string, Buffer> {
  const scratch = join(root, 'scratch');
  load({ SETTLE_CODE_CACHE: join(scratch, 'real') });
  const realNames = caches(join(scratch, 'real'));
  const honest = readFileSync(join(bundle, 'cli.cjs'));
  writeBundle('bad');
  load({ SETTLE_CODE_CACHE: join(scratch, 'evil') });
  writeFileSync(join(bundle, 'cli.cjs'), honest);
  const evil = readFileSync(
    join(
      scratch,
      'evil',
      caches(join(scratch, 'evil')).find((f) => f.startsWith('cli-'))!,
    ),
  );
  const planted = new Map<string, Buffer>();
  planted.set(
    realNames.find((f) => f.startsWith('cli-'))!,
    evil,
  );
  return planted;
}

function plant(folder: string, files: Map<string, Buffer>, uid: number): void {
  for (const [name, bytes] of files) {
    writeFileSync(join(folder, name), bytes);
    chownSync(join(folder, name), uid, uid);
  }
}

describe.runIf(asRoot)('the code cache holds no other user’s code (as ssh reads authorized_keys under StrictModes)', () => {
  beforeEach(() => {
    chmodSync(root, 0o755); // the operator passes through the test's folder, as through /home
  });

  it('a cache file is code: one planted under the operator’s name runs the attacker’s source where it is trusted', () => {
    // the premise of the three tests below: V8 checks the length, not the source
    const own = folderOf(join(root, 'own'), OPERATOR, 0o700);
    plant(own, evilCaches(), OPERATOR);
    expect(startAs(OPERATOR, own).answer).toBe('part-bad');
  });

  it('a folder swapped for the attacker’s after it was checked (renameat2 RENAME_EXCHANGE) is not the one read', () => {
    const parent = folderOf(join(root, 'op'), OPERATOR, 0o755);
    const cache = folderOf(join(parent, 'cache'), OPERATOR, 0o700);
    expect(startAs(OPERATOR, cache).found).toEqual({ cli: 'none', part: 'none' });
    const evil = folderOf(join(parent, 'evil'), ATTACKER, 0o755);
    plant(evil, evilCaches(), ATTACKER);

    // the swap lands between the checks and the reads: the reads go through the folder the checks opened
    const swapped = startAs(OPERATOR, cache, { exchange: [cache, evil] });
    expect(swapped).toEqual({ answer: 'part-one', found: { cli: 'used', part: 'used' }, warnings: [] });
    expect(statSync(cache).uid).toBe(ATTACKER); // it did trade places

    // the next start finds the attacker's folder at the name: not used, said once, nothing written into it
    const before = caches(cache);
    const next = startAs(OPERATOR, cache);
    expect(next.answer).toBe('part-one');
    expect(next.found).toEqual({ cli: 'off', part: 'off' });
    expect(next.warnings).toHaveLength(1);
    expect(next.warnings[0]).toContain(`${cache} belongs to uid ${ATTACKER}`);
    expect(caches(cache)).toEqual(before);
  });

  it('a group-writable setgid team folder (root:team 2775) above the cache: the attacker of the team swaps it in, and it is never read', () => {
    const team = folderOf(join(root, 'team'), 0, 0o2775, TEAM);
    const cache = folderOf(join(team, 'operator-cache'), OPERATOR, 0o700);
    const evil = folderOf(join(team, 'evil'), ATTACKER, 0o755, TEAM);
    plant(evil, evilCaches(), ATTACKER);
    // the operator's own cache in a folder of the team: not trusted, whoever holds the name
    const first = startAs(OPERATOR, cache, { groups: [TEAM] });
    expect(first.found).toEqual({ cli: 'off', part: 'off' });
    expect(first.warnings).toEqual([expect.stringContaining(`${team} is writable by its group (gid ${TEAM}) and not sticky`)]);
    expect(caches(cache)).toEqual([]);

    // the attacker, a member of the team, trades the operator's folder for its own (its own process, its own rights)
    const exchange = spawnSync('setpriv', [
      '--reuid',
      String(ATTACKER),
      '--regid',
      String(TEAM),
      '--clear-groups',
      PYTHON,
      '-c',
      EXCHANGE,
      cache,
      evil,
    ]);
    expect(exchange.status, String(exchange.stderr)).toBe(0);
    expect(statSync(cache).uid).toBe(ATTACKER);
    const attacked = startAs(OPERATOR, cache, { groups: [TEAM] });
    expect(attacked.answer).toBe('part-one');
    expect(attacked.found).toEqual({ cli: 'off', part: 'off' });
    expect(attacked.warnings).toHaveLength(1);

    // a folder everyone may write, without the sticky bit: the same
    const open = folderOf(join(root, 'open'), 0, 0o777);
    const inOpen = folderOf(join(open, 'cache'), OPERATOR, 0o700);
    expect(startAs(OPERATOR, inOpen).found).toEqual({ cli: 'off', part: 'off' });
    // with the sticky bit (as /tmp), nobody but the operator can rename the operator's own folder: used
    const sticky = folderOf(join(root, 'sticky'), 0, 0o1777);
    const inSticky = folderOf(join(sticky, 'cache'), OPERATOR, 0o700);
    expect(startAs(OPERATOR, inSticky).found).toEqual({ cli: 'none', part: 'none' });
    expect(startAs(OPERATOR, inSticky)).toEqual({ answer: 'part-one', found: { cli: 'used', part: 'used' }, warnings: [] });
    // and a folder of another user's in it is not
    const theirs = folderOf(join(sticky, 'theirs'), ATTACKER, 0o777);
    const below = folderOf(join(theirs, 'cache'), OPERATOR, 0o700);
    expect(startAs(OPERATOR, below).found).toEqual({ cli: 'off', part: 'off' });
  });

  it('a file planted while the folder was open to all stays unused after the folder is closed, and is replaced by the operator’s own', () => {
    const cache = folderOf(join(root, 'cache'), OPERATOR, 0o777);
    plant(cache, evilCaches(), ATTACKER);
    chmodSync(cache, 0o700);
    const [planted] = caches(cache);

    const first = startAs(OPERATOR, cache);
    expect(first.answer).toBe('part-one');
    expect(first.found).toEqual({ cli: 'refused', part: 'none' });
    expect(first.warnings).toEqual([expect.stringContaining(`${join(cache, planted!)} belongs to uid ${ATTACKER}`)]);
    expect(statSync(join(cache, planted!)).uid).toBe(OPERATOR); // written over by the operator's own at exit
    expect(startAs(OPERATOR, cache)).toEqual({ answer: 'part-one', found: { cli: 'used', part: 'used' }, warnings: [] });

    // the operator's own file, writable by its group, or with a second name somewhere: refused too
    chmodSync(join(cache, planted!), 0o620);
    expect(startAs(OPERATOR, cache).found.cli).toBe('refused');
    chmodSync(join(cache, planted!), 0o600);
    linkSync(join(cache, planted!), join(root, 'second-name'));
    expect(startAs(OPERATOR, cache).found.cli).toBe('refused');
    // a link at a cache's name is never followed
    const elsewhere = join(root, 'elsewhere.v8cache');
    copyFileSync(
      join(
        cache,
        caches(cache).find((f) => f.startsWith('part-'))!,
      ),
      elsewhere,
    );
    chownSync(elsewhere, OPERATOR, OPERATOR);
    const partName = caches(cache).find((f) => f.startsWith('part-'))!;
    rmSync(join(cache, partName));
    symlinkSync(elsewhere, join(cache, partName));
    expect(startAs(OPERATOR, cache).found.part).toBe('refused');
  });
});
