'use strict';
// The bundle's chunks that every start loads (dist/bundle/*.cjs, scripts/bundle.mjs: cli.cjs and
// what it requires) compiled with V8's code cache: the bytecode of every function the first run of
// the same command compiled, so that a start compiles almost nothing. Node.js 20 has no compile cache of its own (module.enableCompileCache came in
// 22.1) and none at all for ES modules, hence a CommonJS bundle and this loader: an idle run
// starts in about two thirds of the time (docs/BENCHMARKS.md).
//
// The cache is only ever a speed-up. V8 checks each cache against its own version, its flags
// and the source's length, and compiles afresh when they differ (the cache "rejected"); the file
// name carries the chunk's SHA-256, so that no cache is offered to another source of the same
// length. A cache is read and written only in a folder of this user's that nobody else may write
// (it is code this process runs): SETTLE_CODE_CACHE, else systemd's CACHE_DIRECTORY
// (`CacheDirectory=` in ops/*.service), else $XDG_CACHE_HOME/settle-ingest, else
// ~/.cache/settle-ingest; `SETTLE_CODE_CACHE=off` turns it off. Without a usable folder the
// chunks compile as they would without this file. A chunk whose cache was missing or rejected has
// its cache written at the process's exit, for that command, from all the functions the run
// compiled; written to a private temporary file and renamed over, so a reader sees a whole cache
// or none.
const { isAscii } = require('node:buffer');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const vm = require('node:vm');

/** What a chunk found: `used` its cache, `rejected` a cache V8 refused, `none` no cache, `off` no usable folder. */
const loads = [];

/** The folder for this user's caches, created private when missing, or undefined when there is none to trust. */
function cacheFolder(env = process.env) {
  const asked = env.SETTLE_CODE_CACHE;
  if (asked === 'off' || asked === '0') return undefined;
  const home = env.HOME;
  const folder =
    asked ||
    env.CACHE_DIRECTORY?.split(':')[0] ||
    (env.XDG_CACHE_HOME ? path.join(env.XDG_CACHE_HOME, 'settle-ingest') : home ? path.join(home, '.cache', 'settle-ingest') : undefined);
  if (!folder || !path.isAbsolute(folder)) return undefined;
  try {
    fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
    const st = fs.lstatSync(folder);
    // a link, another user's folder, or one others may write: its files could be anyone's code
    if (!st.isDirectory() || st.uid !== process.getuid() || (st.mode & 0o022) !== 0) return undefined;
    return folder;
  } catch {
    return undefined;
  }
}

/**
 * The command a cache is kept for (`run`, `status`, ...): each compiles its own part of the
 * bundle. A cache is written once, by the first run that finds none, so a command's help (which
 * compiles next to nothing of it) is kept apart and never stands for the command's real runs.
 */
function commandOf(argv) {
  const args = argv.slice(2);
  if (args.some((a) => a === '--help' || a === '-h' || a === '--version' || a === '-V')) return 'help';
  const word = args[0];
  return word && /^[a-z][a-z-]{0,30}$/.test(word) ? word : 'other';
}

/**
 * Loads `entry` (a chunk of `bundleDir`) and, through require, every chunk it loads, each compiled
 * with its cache from `folder`; returns the entry's exports.
 */
function requireBundle(bundleDir, entry, { folder = cacheFolder(), command = commandOf(process.argv) } = {}) {
  const plain = Module._extensions['.cjs'] ?? Module._extensions['.js'];
  Module._extensions['.cjs'] = function compileChunk(module, filename) {
    if (path.dirname(filename) !== bundleDir) return plain(module, filename);
    // the bytes hashed as read; the bundle is ASCII (scripts/bundle.mjs), so its text is a
    // one-byte string made by a copy, where UTF-8 decoding a megabyte took 4 ms
    const bytes = fs.readFileSync(filename);
    const source = isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
    const chunk = path.basename(filename, '.cjs');
    const key = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
    const cacheFile = folder && path.join(folder, `${chunk}-${key}-${command}.v8cache`);
    let cachedData;
    if (cacheFile) {
      try {
        cachedData = fs.readFileSync(cacheFile);
      } catch {
        cachedData = undefined;
      }
    }
    const script = new vm.Script(Module.wrap(source), { filename, cachedData });
    const found = !folder ? 'off' : !cachedData ? 'none' : script.cachedDataRejected ? 'rejected' : 'used';
    loads.push({ chunk, found, script, cacheFile });
    const compiled = script.runInThisContext({ displayErrors: true });
    compiled.call(module.exports, module.exports, Module.createRequire(filename), module, filename, bundleDir);
  };
  if (folder) process.once('exit', () => writeCaches(folder, command));
  try {
    return require(path.join(bundleDir, entry));
  } finally {
    // The chunks loaded on demand later (SFTP, zip, OpenPGP, the demo) are Node's own to load: a
    // script compiled here has no `import()` on Node.js 20 without --experimental-vm-modules, and
    // the demo imports an ES module. Only the chunks every start loads are cached.
    Module._extensions['.cjs'] = plain;
  }
}

/** Each chunk's cache that was missing or refused, from what this process compiled; the chunk's older caches for this command go. */
function writeCaches(folder, command) {
  for (const load of loads) {
    if (load.found !== 'none' && load.found !== 'rejected') continue;
    const temporary = `${load.cacheFile}.${process.pid}.tmp`;
    try {
      fs.writeFileSync(temporary, load.script.createCachedData(), { mode: 0o600, flag: 'wx' });
      fs.renameSync(temporary, load.cacheFile);
      const current = path.basename(load.cacheFile);
      const older = new RegExp(`^${load.chunk.replace(/[^\w]/g, '\\$&')}-[0-9a-f]{16}-${command}\\.v8cache$`);
      for (const name of fs.readdirSync(folder)) {
        if (name !== current && older.test(name)) fs.rmSync(path.join(folder, name), { force: true });
      }
    } catch {
      // a full disk or a folder gone: the next run compiles, as it would without a cache; a
      // temporary half written is not left behind
      try {
        fs.rmSync(temporary, { force: true });
      } catch {
        // the folder itself is gone
      }
    }
  }
}

module.exports = { requireBundle, cacheFolder, commandOf, loads };
