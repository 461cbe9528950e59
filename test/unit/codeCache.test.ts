import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
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

  it('leaves no temporary behind when its cache cannot be put in place, and the run still answers', () => {
    const folder = join(root, 'home', '.cache', 'settle-ingest');
    load({});
    const [cliCache] = caches(folder).filter((f) => f.startsWith('cli-'));
    // the chunk's cache name taken by a folder that is not empty: the rename over it fails
    rmSync(join(folder, cliCache!));
    mkdirSync(join(folder, cliCache!));
    writeFileSync(join(folder, cliCache!, 'x'), '');
    expect(load({})).toEqual({ answer: 'part-one', found: { cli: 'none', part: 'used' } });
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
