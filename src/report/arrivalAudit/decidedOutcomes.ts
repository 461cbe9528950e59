import { exactIsoMs, isoText } from '../../isoInstants.js';

/** What the ledger did with an arrival, as its last outcome event says. */
export type ArrivalOutcome = 'loaded' | 'skipped' | 'held' | 'rejected' | 'failed' | 'not_ready' | 'ignored' | 'claimed';

/** The outcomes after which the file stays in the intake for a later run. */
export const WAITING: ReadonlySet<ArrivalOutcome> = new Set(['failed', 'not_ready', 'held', 'claimed']);

/** An arrival's last word in the ledger: what the account says of it, and what it asks of a file left waiting. */
export interface Decided {
  outcome: ArrivalOutcome;
  /** the size the record vouches for, null when it vouches for the name alone */
  size: number | null;
  runId: string | null;
  /** the record's time, as the ledger wrote it */
  recordedAt: string;
  sha256: string | null;
  /** the file a skip duplicates, as its details name it */
  duplicateOf: { name: string; run: string | null } | null;
  reason: string | null;
  /**
   * for an outcome that leaves the file waiting (WAITING): the size:mtime the run left it with, as
   * its details say; where they do not, the (name, bytes) row's (`leaveAs`), read once the last
   * records are known (a year's million claims each carried it until the load after)
   */
  leftAs: string | null;
}

/** What of a record's details the account reads: the file a skip duplicates, the reason, the size:mtime a file was left with. */
export function decidedDetails(
  outcome: ArrivalOutcome,
  details: Record<string, unknown>,
): Pick<Decided, 'duplicateOf' | 'reason' | 'leftAs'> {
  // nearly every record: no details (one object for all of them)
  if (!hasAny(details)) return NOTHING_READ;
  const dup = details.duplicateOf as { name?: unknown; run?: unknown } | undefined;
  return {
    duplicateOf: dup && typeof dup.name === 'string' ? { name: dup.name, run: typeof dup.run === 'string' ? dup.run : null } : null,
    reason: typeof details.reason === 'string' ? details.reason : null,
    leftAs: WAITING.has(outcome) && typeof details.arrival === 'string' ? details.arrival : null,
  };
}

const NOTHING_READ: Pick<Decided, 'duplicateOf' | 'reason' | 'leftAs'> = Object.freeze({ duplicateOf: null, reason: null, leftAs: null });

function hasAny(details: Record<string, unknown>): boolean {
  for (const _ in details) return true;
  return false;
}

const OUTCOMES: ArrivalOutcome[] = ['loaded', 'skipped', 'held', 'rejected', 'failed', 'not_ready', 'ignored', 'claimed'];
const CODE = new Map(OUTCOMES.map((outcome, i) => [outcome, i + 1]));
const SHA_BYTES = 32;
/** Each character's value as a digit of lower-case hex, -1 for any other (upper-case hex would not read back as written). */
const HEX_DIGIT = new Int8Array(128).fill(-1);
for (let digit = 0; digit < 16; digit++) HEX_DIGIT[digit.toString(16).charCodeAt(0)] = digit;

/**
 * Writes a hash of 64 lower-case hex digits (the one form `toString('hex')` gives back) as its 32
 * bytes at `offset`, and says whether it was one; for any other text the bytes written are not
 * to be read. A year's two million records each had a pattern and `Buffer.write` to do this.
 */
function wroteLowerHexSha(sha: string, into: Buffer, offset: number): boolean {
  if (sha.length !== SHA_BYTES * 2) return false;
  for (let i = 0; i < SHA_BYTES; i++) {
    const high = sha.charCodeAt(2 * i);
    const low = sha.charCodeAt(2 * i + 1);
    const value = high < 128 && low < 128 ? (HEX_DIGIT[high]! << 4) | HEX_DIGIT[low]! : -1;
    if (value < 0) return false;
    into[offset + i] = value;
  }
  return true;
}

type Aside = Partial<Pick<Decided, 'recordedAt' | 'sha256' | 'duplicateOf' | 'reason' | 'leftAs'>>;

/**
 * The last word of every arrival of an audit (by its place in the list), in typed arrays: a year's
 * million arrivals each held a record of the ledger (an object, its time, its run and its 64
 * characters of hash) until the end, some 300 bytes each in the heap; here they are 54 bytes
 * each, outside it. The run ids are held once each; a hash is kept as its 32 bytes and a time as
 * its milliseconds, where the ledger wrote them in the one form they give back (lower-case hex,
 * `toISOString`), else as written, aside; the few details the account reads aside too, only where
 * there are some.
 */
export class DecidedOutcomes {
  private readonly outcome: Uint8Array;
  private readonly size: Float64Array;
  private readonly run: Uint32Array;
  private readonly recordedAt: Float64Array;
  private readonly sha: Buffer;
  private readonly runs: (string | null)[] = [null];
  private readonly runIndex = new Map<string, number>();
  /** what does not fit the arrays: a time or hash written otherwise, the details read */
  private readonly aside = new Map<number, Aside>();

  constructor(count: number) {
    this.outcome = new Uint8Array(count);
    this.size = new Float64Array(count);
    this.run = new Uint32Array(count);
    this.recordedAt = new Float64Array(count);
    this.sha = Buffer.alloc(count * SHA_BYTES);
  }

  /** The arrival's outcome so far, undefined when the ledger had none. */
  outcomeOf(index: number): ArrivalOutcome | undefined {
    const code = this.outcome[index]!;
    return code === 0 ? undefined : OUTCOMES[code - 1];
  }

  /**
   * `exactAt`: the record's time in milliseconds where its text is exactly `toISOString`'s of
   * them (isoInstants.ts), else NaN; the caller's, where it has read it already.
   */
  set(index: number, decided: Decided, exactAt = exactIsoMs(decided.recordedAt)): void {
    this.outcome[index] = CODE.get(decided.outcome)!;
    this.size[index] = decided.size ?? Number.NaN;
    this.run[index] = this.runOf(decided.runId);
    this.recordedAt[index] = exactAt;
    const exactTime = !Number.isNaN(exactAt);
    const exactSha = decided.sha256 !== null && wroteLowerHexSha(decided.sha256, this.sha, index * SHA_BYTES);
    if (exactTime && exactSha && decided.duplicateOf === null && decided.reason === null && decided.leftAs === null) {
      if (this.aside.size > 0) this.aside.delete(index);
      return;
    }
    const aside: Aside = {};
    if (!exactTime) aside.recordedAt = decided.recordedAt;
    if (!exactSha) aside.sha256 = decided.sha256;
    if (decided.duplicateOf !== null) aside.duplicateOf = decided.duplicateOf;
    if (decided.reason !== null) aside.reason = decided.reason;
    if (decided.leftAs !== null) aside.leftAs = decided.leftAs;
    this.aside.set(index, aside);
  }

  /** The size:mtime the arrival's last record left it with, from its (name, bytes) row, where its details did not say. */
  leaveAs(index: number, leftAs: string): void {
    const aside = this.aside.get(index);
    if (aside) aside.leftAs = leftAs;
    else this.aside.set(index, { leftAs });
  }

  get(index: number): Decided | undefined {
    const outcome = this.outcomeOf(index);
    if (outcome === undefined) return undefined;
    const aside = this.aside.get(index);
    const size = this.size[index]!;
    return {
      outcome,
      size: Number.isNaN(size) ? null : size,
      runId: this.runs[this.run[index]!]!,
      recordedAt: aside?.recordedAt ?? isoText(this.recordedAt[index]!),
      sha256: aside && 'sha256' in aside ? (aside.sha256 ?? null) : this.sha.toString('hex', index * SHA_BYTES, (index + 1) * SHA_BYTES),
      duplicateOf: aside?.duplicateOf ?? null,
      reason: aside?.reason ?? null,
      leftAs: aside?.leftAs ?? null,
    };
  }

  private runOf(runId: string | null): number {
    if (runId === null) return 0;
    let index = this.runIndex.get(runId);
    if (index === undefined) {
      index = this.runs.push(runId) - 1;
      this.runIndex.set(runId, index);
    }
    return index;
  }
}
