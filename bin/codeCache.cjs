'use strict';
// The bundle's chunks that every start loads (dist/bundle/*.cjs, scripts/bundle.mjs: cli.cjs and
// what it requires) compiled with V8's code cache: the bytecode of every function the first run of
// the same command compiled, so that a start compiles almost nothing. Node.js 20 has no compile cache of its own (module.enableCompileCache came in
// 22.1) and none at all for ES modules, hence a CommonJS bundle and this loader: a start takes
// about 40 ms less CPU (110 ms where it took 150 ms; docs/BENCHMARKS.md).
//
// A cache is code: V8 checks it against its own version, its flags and the source's length, never
// the source itself, so whoever writes a cache file chooses what the chunk runs. It is therefore
// read as ssh reads `authorized_keys` under StrictModes, or not at all:
// - the folder (SETTLE_CODE_CACHE, else systemd's CACHE_DIRECTORY, `CacheDirectory=` in
//   ops/*.service, else $XDG_CACHE_HOME/settle-ingest, else ~/.cache/settle-ingest;
//   `SETTLE_CODE_CACHE=off` turns it off) has the folders above it resolved once (realpath, as
//   ssh does; the folder itself is never followed if it is a link), then is opened
//   from `/` one folder at a time, each relative to the one above it (openat: Node.js has none,
//   so through /proc/self/fd/N/NAME) with O_DIRECTORY|O_NOFOLLOW, and each checked on its own
//   descriptor: every folder above it owned by root or this user and writable by nobody else (a
//   sticky folder others may write, as /tmp, only above a folder of this user's own or root's,
//   which the sticky bit keeps from being renamed away), the folder itself this user's and writable by
//   nobody else;
// - every file is opened relative to that descriptor with O_NOFOLLOW and used only when, on its
//   own descriptor, it is a regular file of this user's, writable by nobody else, with one link.
// What was checked is what is read: a folder renamed or swapped after it was opened is not the
// one read. Anything else is not used, said in one line on stderr, and the start compiles as if
// there were no cache. A folder that cannot be made at all (a read-only home) is no cache, said
// nothing of.
//
// A chunk whose cache was missing, refused or rejected has its cache written at the process's
// exit, for that command, from all the functions the run compiled: written to a private temporary
// file in the opened folder and renamed over, so a reader sees a whole cache or none.
const { isAscii } = require('node:buffer');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const vm = require('node:vm');

const { O_DIRECTORY, O_NOFOLLOW, O_RDONLY, O_NONBLOCK, O_WRONLY, O_CREAT, O_EXCL } = fs.constants;
/** Linux's O_PATH (fs.constants has none): a descriptor that only names a folder, so one a user may only pass through opens too. */
const O_PATH = 0o10000000;

/**
 * What a chunk found: `used` its cache, `rejected` a cache V8 refused, `refused` a file that is
 * not this user's alone (never given to V8), `none` no cache, `off` no folder to trust.
 */
const loads = [];

/** Text from the environment or the file system on a terminal: control and format characters spelled out. */
const shown = (text) =>
  text.replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, (ch) => `\\u${ch.codePointAt(0).toString(16).padStart(4, '0')}`);

let warned = false;
/** One line on stderr for a start, whatever else is refused after it: the cache is a speed-up, not news. */
function warn(why) {
  if (warned) return;
  warned = true;
  process.stderr.write(`settle-ingest: the code cache is not used: ${shown(why)}; the start compiles without it\n`);
}

/** Who may write a folder or file besides its owner, by its mode; null when nobody. */
function othersWrite(stats) {
  if ((stats.mode & 0o022) === 0) return null;
  if ((stats.mode & 0o002) !== 0) return 'everyone';
  return `its group (gid ${stats.gid})`;
}

/** The folder named for this user's caches, as configured; undefined when it is off or there is none. */
function folderPath(env) {
  const asked = env.SETTLE_CODE_CACHE;
  if (asked === 'off' || asked === '0') return undefined;
  const home = env.HOME;
  return (
    asked ||
    env.CACHE_DIRECTORY?.split(':')[0] ||
    (env.XDG_CACHE_HOME ? path.join(env.XDG_CACHE_HOME, 'settle-ingest') : home ? path.join(home, '.cache', 'settle-ingest') : undefined)
  );
}

/** Why a folder on the way down may not stand above the cache (`child`: the next folder down), or null. */
function aboveProblem(at, stats, child, uid) {
  if (stats.uid !== 0 && stats.uid !== uid) return `${at} belongs to uid ${stats.uid}, neither root nor this user (uid ${uid})`;
  const others = othersWrite(stats);
  if (others === null) return null;
  // the sticky bit keeps others from renaming or removing what they do not own: a folder of this
  // user's (or root's, which nobody else may rename either) is safe in it
  if ((stats.mode & 0o1000) !== 0 && (child.uid === uid || child.uid === 0)) return null;
  const sticky = (stats.mode & 0o1000) !== 0;
  return `${at} is writable by ${others}${sticky ? ` and the folder in it belongs to uid ${child.uid}` : ' and not sticky'}: the folder below it could be swapped`;
}

/** Why the cache folder itself may not be used, or null. */
function folderProblem(at, stats, uid) {
  if (stats.uid !== uid) return `${at} belongs to uid ${stats.uid}, not to this user (uid ${uid})`;
  const others = othersWrite(stats);
  return others === null ? null : `${at} is writable by ${others}`;
}

/** Why a cache file may not be used, or null. */
function fileProblem(at, stats, uid) {
  if (!stats.isFile()) return `${at} is not a regular file`;
  if (stats.uid !== uid) return `${at} belongs to uid ${stats.uid}, not to this user (uid ${uid})`;
  const others = othersWrite(stats);
  if (others !== null) return `${at} is writable by ${others}`;
  if (stats.nlink !== 1) return `${at} has ${stats.nlink} links`;
  return null;
}

/**
 * The cache folder opened and checked as described above: its descriptor (kept open for the
 * process), its path for messages and `base`, the name its files are reached by relative to that
 * descriptor; undefined when there is none to trust (said once on stderr, unless there is none at all).
 */
function openCacheFolder(env = process.env) {
  const asked = folderPath(env);
  if (!asked) return undefined;
  if (process.platform !== 'linux' || typeof process.getuid !== 'function') return undefined; // no /proc/self/fd: no openat
  if (!path.isAbsolute(asked)) {
    warn(`${asked} is not an absolute path`);
    return undefined;
  }
  let real;
  try {
    fs.mkdirSync(asked, { recursive: true, mode: 0o700 });
    // the folders above it resolved (a /home that is a link), the folder itself never followed
    real = path.join(fs.realpathSync(path.dirname(asked)), path.basename(asked));
  } catch {
    return undefined; // no folder can be made here (a read-only home): no cache, as SETTLE_CODE_CACHE=off
  }
  const uid = process.getuid();
  let fd;
  let at = '/';
  try {
    fd = fs.openSync('/', O_PATH | O_DIRECTORY);
    let stats = fs.fstatSync(fd);
    for (const name of real.split('/').filter(Boolean)) {
      const next = path.join(at, name);
      let child;
      try {
        child = fs.openSync(`/proc/self/fd/${fd}/${name}`, O_PATH | O_DIRECTORY | O_NOFOLLOW);
      } catch (err) {
        warn(`${next} cannot be opened as a folder (${err.code ?? err.message}): a link or a file put there since`);
        return closeAll(fd);
      }
      const childStats = fs.fstatSync(child);
      const problem = aboveProblem(at, stats, childStats, uid);
      fs.closeSync(fd);
      fd = child;
      if (problem) {
        warn(problem);
        return closeAll(fd);
      }
      stats = childStats;
      at = next;
    }
    const problem = folderProblem(at, stats, uid);
    if (problem) {
      warn(problem);
      return closeAll(fd);
    }
    return { fd, path: at, base: `/proc/self/fd/${fd}` };
  } catch (err) {
    warn(`${at} cannot be checked (${err.code ?? err.message})`);
    return closeAll(fd);
  }
}

function closeAll(fd) {
  if (fd !== undefined) fs.closeSync(fd);
  return undefined;
}

/**
 * A cache file of the opened folder, read through its own descriptor once that descriptor shows
 * it is this user's alone: its bytes; `refused` when it is there and is not; undefined when there is none.
 */
function readCache(folder, name) {
  let fd;
  try {
    fd = fs.openSync(`${folder.base}/${name}`, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (err) {
    if (err.code === 'ENOENT') return undefined;
    warn(`${path.join(folder.path, name)} cannot be opened (${err.code ?? err.message})`);
    return 'refused';
  }
  try {
    const problem = fileProblem(path.join(folder.path, name), fs.fstatSync(fd), process.getuid());
    if (problem) {
      warn(problem);
      return 'refused';
    }
    return fs.readFileSync(fd);
  } catch (err) {
    warn(`${path.join(folder.path, name)} cannot be read (${err.code ?? err.message})`);
    return 'refused';
  } finally {
    fs.closeSync(fd);
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
 * with its cache from the folder; returns the entry's exports. `afterFolderOpened` is the tests'
 * seam (bin/settle-ingest.js never passes it): it runs once the folder is opened and checked and
 * before any cache is read there, where a test swaps the folder as an attacker would.
 */
function requireBundle(bundleDir, entry, { env = process.env, command = commandOf(process.argv), afterFolderOpened } = {}) {
  const folder = openCacheFolder(env);
  if (folder && afterFolderOpened) afterFolderOpened(folder.path);
  const plain = Module._extensions['.cjs'] ?? Module._extensions['.js'];
  const compileChunk = (module, filename) => {
    if (path.dirname(filename) !== bundleDir) return plain(module, filename);
    // the bytes hashed as read; the bundle is ASCII (scripts/bundle.mjs), so its text is a
    // one-byte string made by a copy, where UTF-8 decoding a megabyte took 4 ms
    const bytes = fs.readFileSync(filename);
    const source = isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
    const chunk = path.basename(filename, '.cjs');
    const key = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
    const cacheName = `${chunk}-${key}-${command}.v8cache`;
    const read = folder ? readCache(folder, cacheName) : undefined;
    const cachedData = Buffer.isBuffer(read) ? read : undefined;
    const script = new vm.Script(Module.wrap(source), { filename, cachedData });
    const found = !folder ? 'off' : read === 'refused' ? 'refused' : !cachedData ? 'none' : script.cachedDataRejected ? 'rejected' : 'used';
    loads.push({ chunk, found, script, cacheName });
    const compiled = script.runInThisContext({ displayErrors: true });
    compiled.call(module.exports, module.exports, Module.createRequire(filename), module, filename, bundleDir);
  };
  Module._extensions['.cjs'] = compileChunk;
  if (folder) process.once('exit', () => writeCaches(folder, command));
  try {
    return require(path.join(bundleDir, entry));
  } finally {
    // The chunks loaded on demand later (SFTP, zip, OpenPGP, the demo) are Node's own to load: a
    // script compiled here has no `import()` on Node.js 20 without --experimental-vm-modules, and
    // the demo imports an ES module. Only the chunks every start loads are cached, and those
    // required later that import nothing (LATE_CHUNKS).
    Module._extensions['.cjs'] = function compileLateChunk(module, filename) {
      const late = path.dirname(filename) === bundleDir && LATE_CHUNKS.has(path.basename(filename, '.cjs'));
      return (late ? compileChunk : plain)(module, filename);
    };
  }
}

/**
 * Chunks a command requires after its start, when it needs them, that are cached as the start's
 * are: plain CommonJS with no `import()`. `holidays`: date-holidays and its calendars, which every
 * command reading a config with `"expect"` loads (scripts/bundle.mjs).
 */
const LATE_CHUNKS = new Set(['holidays']);

/**
 * Each chunk's cache that was missing, refused or rejected, from what this process compiled,
 * written in the opened folder (through its descriptor, never its path again); the chunk's older
 * caches for this command go. A refused file (another user's) is replaced by this user's own.
 */
function writeCaches(folder, command) {
  for (const load of loads) {
    if (load.found !== 'none' && load.found !== 'rejected' && load.found !== 'refused') continue;
    const temporary = `${folder.base}/${load.cacheName}.${process.pid}.tmp`;
    try {
      const fd = fs.openSync(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
      try {
        fs.writeFileSync(fd, load.script.createCachedData());
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(temporary, `${folder.base}/${load.cacheName}`);
      const older = new RegExp(`^${load.chunk.replace(/[^\w]/g, '\\$&')}-[0-9a-f]{16}-${command}\\.v8cache$`);
      for (const name of fs.readdirSync(folder.base)) {
        if (name !== load.cacheName && older.test(name)) fs.rmSync(`${folder.base}/${name}`, { force: true });
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

module.exports = { requireBundle, openCacheFolder, commandOf, loads };
