import { createHash } from 'node:crypto';
import { Worker } from 'node:worker_threads';

/**
 * The SHA-256 of a local file being staged, as the staging loop of stageAndHash.ts asks for it:
 * the buffer to read the next chunk into, the chunk read (hash it), the digest at the end.
 * `release` ends the use, whatever happened; `digest` is asked once, after the last chunk.
 */
export interface ChunkHash {
  /** where to read the next chunk: the whole buffer, free until its `update` */
  nextBuffer(): Buffer | Promise<Buffer>;
  /** the chunk just read into the start of the buffer `nextBuffer` gave (its bytes are not changed until they are hashed and written) */
  update(chunk: Buffer): void;
  digest(): Promise<string>;
  release(): void;
}

/** The hash on this thread, from one buffer (a local file) or the stream's own chunks (no buffer). */
export class ThisThreadHash implements ChunkHash {
  private readonly hash = createHash('sha256');

  constructor(private readonly buffer?: Buffer) {}

  nextBuffer(): Buffer {
    if (!this.buffer) throw new Error('this hash reads into no buffer of its own');
    return this.buffer;
  }

  update(chunk: Buffer): void {
    this.hash.update(chunk);
  }

  async digest(): Promise<string> {
    return this.hash.digest('hex');
  }

  release(): void {}
}

/**
 * The ring the worker hashes from: slots of `SLOT_BYTES` in one SharedArrayBuffer, and a control
 * block of 32-bit counters. The main thread reads a chunk into the next free slot, hands it on
 * (its length, then `published` + 1) and writes it to the staged copy from the same slot; the
 * worker hashes the slots in order and counts them in `hashed`. A slot is read into again only
 * once `hashed` has passed it, and its write (on the main thread, synchronous) is done by then:
 * the bytes hashed are the bytes written. A length of -1 ends a file: the worker puts its digest
 * in the control block and starts a new hash. 64 slots of 64 KiB (a 4 MiB ring) measured best on
 * a 1 GiB file (bench/DIARY.md, 2026-12-03): 0.82–0.98 s against 0.88–1.73 s for 16 of
 * 256 KiB, whose larger writes cost the kernel more (the reason for stageAndHash.ts's 64 KiB).
 */
const SLOTS = 64;
const SLOT_BYTES = 64 * 1024;
const PUBLISHED = 0;
const HASHED = 1;
const LENGTHS = 2;
const DIGEST_AT = (LENGTHS + SLOTS) * 4;
const CONTROL_BYTES = DIGEST_AT + 32;
const END_OF_FILE = -1;

/**
 * A local file from this size on is hashed on the worker. Its start costs about 30 ms (about
 * 1 ms of it on this thread; measured 2026-12-03), met by the ring's first 4 MiB read meanwhile.
 * Staging the first file of a process (bench/DIARY.md, 2026-12-03): 32 MiB 47–54 ms on the
 * worker against 33–39 ms on this thread, 64 MiB 67–77 against 66–68, 128 MiB 112–126 against
 * 123–137; a second file, the worker kept, 21 against 31 ms, 48 against 65, 88 against 121. So
 * from 64 MiB on even the first file is no slower. The bench's 1M-row file (63.6 MiB) stays here.
 */
export const HASH_WORKER_FROM_BYTES = 64 * 1024 * 1024;

/** The worker's code: a CommonJS script (eval), so that both builds carry it inside this module. */
const WORKER_CODE = `
const { workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { control, slots, slotBytes } = workerData;
const counters = new Int32Array(control, 0, ${LENGTHS} + ${SLOTS});
const digestOut = new Uint8Array(control, ${DIGEST_AT}, 32);
let hash = createHash('sha256');
for (let taken = 0; ; taken = (taken + 1) | 0) {
  while (Atomics.load(counters, ${PUBLISHED}) === taken) Atomics.wait(counters, ${PUBLISHED}, taken);
  const slot = (taken >>> 0) % ${SLOTS};
  const length = Atomics.load(counters, ${LENGTHS} + slot);
  if (length === ${END_OF_FILE}) {
    digestOut.set(hash.digest());
    hash = createHash('sha256');
  } else hash.update(new Uint8Array(slots, slot * slotBytes, length));
  Atomics.store(counters, ${HASHED}, (taken + 1) | 0);
  Atomics.notify(counters, ${HASHED});
}
`;

/** One worker and its ring: started on the first large file, kept (unref'd) for the later ones. */
class HashWorker {
  private readonly control = new SharedArrayBuffer(CONTROL_BYTES);
  private readonly slots = new SharedArrayBuffer(SLOTS * SLOT_BYTES);
  private readonly views = Array.from({ length: SLOTS }, (_unused, index) => Buffer.from(this.slots, index * SLOT_BYTES, SLOT_BYTES));
  readonly counters = new Int32Array(this.control, 0, LENGTHS + SLOTS);
  private readonly worker: Worker;
  /** rejects once the worker is gone (its error, its exit): every wait races it */
  readonly stopped: Promise<never>;
  private stopReason: Error | undefined;
  busy = false;

  constructor() {
    this.worker = new Worker(WORKER_CODE, {
      eval: true,
      workerData: { control: this.control, slots: this.slots, slotBytes: SLOT_BYTES },
      // the hash reads no environment
      env: {},
    });
    this.worker.unref();
    this.stopped = new Promise<never>((_resolve, reject) => {
      const gone = (reason: Error) => {
        this.stopReason ??= reason;
        if (current === this) current = undefined;
        reject(this.stopReason);
      };
      this.worker.once('error', (err) => gone(new Error(`the SHA-256 worker thread failed: ${err.message}`, { cause: err })));
      this.worker.once('exit', (code) =>
        gone(new Error(`the SHA-256 worker thread stopped (exit code ${code}) before the file was hashed`)),
      );
    });
    // the rejection is read by the waits that race it; with none waiting it is no failure of its own
    this.stopped.catch(() => undefined);
  }

  slot(index: number): Buffer {
    return this.views[index]!;
  }

  digest(): string {
    return Buffer.from(this.control, DIGEST_AT, 32).toString('hex');
  }

  /** holds the process open while a file is on the ring, never while it is idle */
  hold(held: boolean): void {
    if (held) this.worker.ref();
    else this.worker.unref();
  }

  /**
   * Once the worker's count of hashed slots may differ from `seen` (or the worker is gone): the
   * callers read the count again and wait again while it has not moved. Beside the wait, a timer
   * of the event loop's own: Node.js's Atomics.waitAsync can leave an idle loop unwoken by the
   * notify (nodejs/node#44729, #61941), and a CI run of settle-ingest once sat three minutes after
   * staging a 200 MB file, before its claim, where this wait is. The timer costs a check every
   * 25 ms at worst; the wait's own wake-up, when it comes, ends it first.
   */
  async hashedPast(seen: number): Promise<void> {
    if (this.stopReason) throw this.stopReason;
    const waited = waitAsync(this.counters, HASHED, seen);
    if (!waited.async) return;
    let timer: NodeJS.Timeout | undefined;
    const recheck = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, RECHECK_MS);
    });
    try {
      await Promise.race([waited.value, this.stopped, recheck]);
    } finally {
      clearTimeout(timer);
    }
  }

  async terminate(): Promise<void> {
    this.stopReason ??= new Error('the SHA-256 worker thread was stopped before the file was hashed');
    if (current === this) current = undefined;
    await this.worker.terminate();
  }
}

let current: HashWorker | undefined;

/** how often a wait for the hash worker reads its count again without being woken (hashedPast) */
const RECHECK_MS = 25;

/** Atomics.waitAsync (ES2024, in Node.js 20), which the compiler's library here does not declare */
type WaitAsync = (
  array: Int32Array,
  index: number,
  value: number,
) => { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

/** One file's use of the ring. */
class RingHash implements ChunkHash {
  private published: number;
  private ended = false;

  constructor(private readonly worker: HashWorker) {
    this.published = Atomics.load(worker.counters, PUBLISHED);
    worker.busy = true;
    worker.hold(true);
  }

  /** the slots handed on and not yet hashed */
  private inFlight(): number {
    return (this.published - Atomics.load(this.worker.counters, HASHED)) | 0;
  }

  nextBuffer(): Buffer | Promise<Buffer> {
    if (this.inFlight() < SLOTS) return this.worker.slot((this.published >>> 0) % SLOTS);
    return this.freeSlot();
  }

  private async freeSlot(): Promise<Buffer> {
    while (this.inFlight() >= SLOTS) await this.worker.hashedPast(Atomics.load(this.worker.counters, HASHED));
    return this.worker.slot((this.published >>> 0) % SLOTS);
  }

  update(chunk: Buffer): void {
    this.handOn(chunk.length);
  }

  private handOn(length: number): void {
    const { counters } = this.worker;
    Atomics.store(counters, LENGTHS + ((this.published >>> 0) % SLOTS), length);
    this.published = (this.published + 1) | 0;
    Atomics.store(counters, PUBLISHED, this.published);
    Atomics.notify(counters, PUBLISHED);
  }

  async digest(): Promise<string> {
    await this.nextBuffer();
    this.ended = true;
    this.handOn(END_OF_FILE);
    while (this.inFlight() > 0) await this.worker.hashedPast(Atomics.load(this.worker.counters, HASHED));
    return this.worker.digest();
  }

  release(): void {
    if (this.ended) return this.free();
    // a file given up part way: its hash is ended (and dropped), so the next file's starts anew;
    // the end takes a slot, and the ring stays this file's until it has one
    this.ended = true;
    const slot = this.nextBuffer();
    if (!(slot instanceof Promise)) {
      this.handOn(END_OF_FILE);
      return this.free();
    }
    slot
      .then(() => this.handOn(END_OF_FILE))
      .then(
        () => this.free(),
        () => this.free(),
      );
  }

  private free(): void {
    this.worker.busy = false;
    this.worker.hold(false);
  }
}

/**
 * The hash for a local file of `size` bytes: on the worker from `workerFromBytes` on (started
 * here the first time, kept for the files after), else on this thread from one buffer of
 * `chunkBytes` (or less for a small file). A worker that cannot start, or one another file
 * is using, leaves the file to this thread.
 */
export function localFileHash(size: number, chunkBytes: number, workerFromBytes: number = HASH_WORKER_FROM_BYTES): ChunkHash {
  if (size >= workerFromBytes) {
    try {
      current ??= new HashWorker();
      if (!current.busy) return new RingHash(current);
    } catch {
      // no thread to be had (resource limits): the hash stays here
    }
  }
  return new ThisThreadHash(Buffer.allocUnsafeSlow(Math.min(chunkBytes, size + 1)));
}

/** Ends the worker, if one was started (the next large file starts another). */
export async function stopHashWorker(): Promise<void> {
  await current?.terminate();
}

/** Ends the worker at once, as a crash of its thread would: the fault point `fail:mid-hash` (src/faults.ts). */
export function killHashWorker(): void {
  void current?.terminate();
}
