#!/usr/bin/env node
// Times one part of staging a local file alone, from the page cache, for issue 33's staging
// figure (docs/BENCHMARKS.md): where the CLI's stage + SHA-256 loses against
// `tee STAGING < FILE | openssl dgst -sha256`.
//
//   node scripts/staging-parts.mjs MODE FILE STAGING
//
// MODE: read (the read alone), read-hash, write (read and write, no hash), loop (what
// src/pipeline/stageAndHash.ts does for a local file: 64 KiB read, hash, write on one thread),
// pool-write (two buffers: each chunk's write in libuv's pool while this thread hashes it),
// copy (fs.copyFile of the pinned descriptor: copy_file_range, or a reflink where the file
// system has one), copy-hash (that copy in the pool while this thread hashes the staged copy
// behind it), worker-hash (src/pipeline/hashWorker.ts from dist/, as stageAndHash.ts uses it for
// a large file: read and write on this thread from the ring's slots, the hash on the worker;
// `npm run build` first). STAGING is removed first and left behind for a look at its mode. Run each under
// `/usr/bin/time -f '%e %U %S'`, alternating with the reference, and note the load average.
import { createHash } from 'node:crypto';
import { closeSync, constants, copyFile, fstatSync, openSync, readSync, rmSync, write, writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { localFileHash, stopHashWorker } from '../dist/pipeline/hashWorker.js';

const [mode, source, staging] = process.argv.slice(2);
const modes = ['read', 'read-hash', 'write', 'loop', 'pool-write', 'copy', 'copy-hash', 'worker-hash'];
if (!modes.includes(mode) || !source || !staging) {
  console.error(`usage: staging-parts.mjs ${modes.join('|')} FILE STAGING`);
  process.exit(2);
}
const chunkBytes = Number(process.env.CHUNK_BYTES ?? (mode === 'pool-write' ? 256 * 1024 : 64 * 1024));
const writeAt = promisify(write);
const copy = promisify(copyFile);

rmSync(staging, { force: true });
const started = process.hrtime.bigint();
const input = openSync(source, constants.O_RDONLY | constants.O_NOFOLLOW);
const output = openSync(staging, 'wx+', 0o600);
const buffers = [Buffer.allocUnsafeSlow(chunkBytes), Buffer.allocUnsafeSlow(chunkBytes)];
const hash = createHash('sha256');
let position = 0;
let waits = 0;
let workerDigest;

async function writeAllAt(chunk, at) {
  for (let done = 0; done < chunk.length;) done += (await writeAt(output, chunk, done, chunk.length - done, at + done)).bytesWritten;
}

if (mode === 'copy' || mode === 'copy-hash') {
  // the pinned descriptors by their /proc names: the very inodes, whatever their names are now
  let copied = false;
  const copying = copy(`/proc/self/fd/${input}`, `/proc/self/fd/${output}`).then(() => (copied = true));
  while (mode === 'copy-hash') {
    const bytes = readSync(output, buffers[0], 0, chunkBytes, position);
    if (bytes > 0) {
      hash.update(buffers[0].subarray(0, bytes));
      position += bytes;
    } else if (copied) break;
    else {
      // caught up with the copy: spinning here takes the core the copy runs on
      waits++;
      await sleep(1);
    }
  }
  await copying;
} else if (mode === 'pool-write') {
  let writing = Promise.resolve();
  for (let which = 0; ; which ^= 1) {
    const buffer = buffers[which];
    const bytes = readSync(input, buffer, 0, chunkBytes, position);
    if (bytes === 0) break;
    const chunk = buffer.subarray(0, bytes);
    const before = writing;
    writing = writeAllAt(chunk, position);
    hash.update(chunk);
    // the other buffer is read into next: its write must be done
    await before;
    position += bytes;
  }
  await writing;
} else if (mode === 'worker-hash') {
  // from the first byte on the worker, whatever the file's size
  const ring = localFileHash(fstatSync(input).size, chunkBytes, 0);
  for (;;) {
    const free = ring.nextBuffer();
    const buffer = free instanceof Promise ? await free : free;
    const bytes = readSync(input, buffer, 0, buffer.length, position);
    if (bytes === 0) break;
    const chunk = buffer.subarray(0, bytes);
    ring.update(chunk);
    for (let done = 0; done < bytes;) done += writeSync(output, chunk, done, bytes - done);
    position += bytes;
  }
  workerDigest = await ring.digest();
  ring.release();
  await stopHashWorker();
} else {
  for (;;) {
    const bytes = readSync(input, buffers[0], 0, chunkBytes, position);
    if (bytes === 0) break;
    const chunk = buffers[0].subarray(0, bytes);
    if (mode !== 'read' && mode !== 'write') hash.update(chunk);
    if (mode === 'write' || mode === 'loop') for (let done = 0; done < bytes;) done += writeSync(output, chunk, done, bytes - done);
    position += bytes;
  }
}
const digest = workerDigest ?? hash.digest('hex');
const stagedMode = (fstatSync(output).mode & 0o777).toString(8);
closeSync(output);
closeSync(input);
const ms = Number(process.hrtime.bigint() - started) / 1e6;
console.log(
  `${mode}: ${ms.toFixed(0)} ms, ${position} bytes hashed, sha256 ${digest.slice(0, 16)}…, staged mode ${stagedMode}, waits ${waits}`,
);
