import * as fs from 'node:fs';

/**
 * Local file-system calls made on this thread, under node:fs/promises' names and signatures
 * (a failure is a rejection), so that a caller changes its import and nothing else.
 *
 * Through node:fs/promises every call is a round trip to libuv's thread pool: a worker thread
 * woken, then the event loop woken back. On a virtual machine each wake-up is an interrupt
 * between cores, and a run over many small files spent more of its time in those wake-ups
 * (38% of its samples, in the kernel's wake-up path) than in the calls themselves, which take
 * microseconds on a local disk (docs/BENCHMARKS.md). Used for the intake folder, the staging
 * files and the move; a folder on a network mount that stops answering holds the process
 * here instead of in a pool thread, which a kill -9 ends as safely as any other step.
 */
export async function stat(path: string): Promise<fs.Stats> {
  return fs.statSync(path);
}

export async function lstat(path: string): Promise<fs.Stats> {
  return fs.lstatSync(path);
}

export async function link(existing: string, path: string): Promise<void> {
  fs.linkSync(existing, path);
}

export async function rename(from: string, to: string): Promise<void> {
  fs.renameSync(from, to);
}

export async function unlink(path: string): Promise<void> {
  fs.unlinkSync(path);
}

export async function rmdir(path: string): Promise<void> {
  fs.rmdirSync(path);
}

export async function mkdir(path: string, options?: fs.MakeDirectoryOptions): Promise<void> {
  fs.mkdirSync(path, options);
}

export function readdir(path: string): Promise<string[]>;
export function readdir(path: string, options: { withFileTypes: true }): Promise<fs.Dirent[]>;
export async function readdir(path: string, options?: { withFileTypes: true }): Promise<string[] | fs.Dirent[]> {
  return options ? fs.readdirSync(path, options) : fs.readdirSync(path);
}

/** A file's or folder's entry made durable: opened, fsynced, closed. */
export async function fsyncPath(path: string): Promise<void> {
  const fd = fs.openSync(path, fs.constants.O_RDONLY);
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** `length` bytes of the file at `position` (fewer at its end), read without a file handle. */
export async function readAt(path: string, length: number, position: number): Promise<Buffer> {
  const fd = fs.openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(length);
    return buffer.subarray(0, fs.readSync(fd, buffer, 0, length, position));
  } finally {
    fs.closeSync(fd);
  }
}
