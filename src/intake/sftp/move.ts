import { posix } from 'node:path';
import type { Logger } from '../../logEvents.js';
import { errorMessage } from '../../errors.js';
import { faultPoint } from '../../faults.js';
import { FileGoneError, isPinned, suffixedName, taggedName, type DecidedFile, type RouteResult } from '../intake.js';
import { isMoverName, moverIsGone, moverName, workFolderName } from '../moverName.js';
import { probeRename, type RenameTraits } from './renameProbe.js';
import { localSampleDigest, sampleDigest, sampleRanges } from '../sampleCheck.js';
import { LINK, lookAt, remotePin, type RemoteLook } from './pin.js';
import type { SftpSession } from './session.js';

/** What moving needs from the SFTP intake it moves out of. */
export interface MoverPort {
  /** runs `operation` on the live connection, reconnecting (and running it once more) when it dropped */
  run<T>(operation: (s: SftpSession) => Promise<T>): Promise<T>;
  /** how the ledger names a path on this server */
  location(path: string): string;
  readonly intakeDir: string;
  readonly log: Logger;
}

/** How a RENAME that answered done left things, looked at from both ends. */
type Landing =
  | { kind: 'landed' }
  /** nothing arrived at the target: the RENAME did nothing, whatever it answered */
  | { kind: 'not-done'; why: string }
  /** what arrived is not the decided file (rewritten, or a link, between the last look and the rename) */
  | { kind: 'not-ours'; what: string }
  /** the intake name is a link and what it pointed to arrived: the server's RENAME followed the link (ProFTPD's does) */
  | { kind: 'link-target'; target: string }
  /** the decided file arrived and is still in the intake too: the server copied instead of moving */
  | { kind: 'copied' };

const MAX_SUFFIX = 10_000;

/**
 * Moves decided files out of an SFTP intake so that nothing is ever overwritten, nothing is
 * moved through a link, and nothing is recorded that did not happen, on every server:
 *
 * - What the server's RENAME does to an existing target is learned once per connection, in a
 *   folder of the tool's own (renameProbe.ts). Where it refuses (OpenSSH, ProFTPD), a file lands
 *   under its own name, or the next free suffix when the rename is refused. Where it replaces
 *   (rclone), no look before a rename can make it safe: the file lands under a name unique to its
 *   move (`settle_x.<run>.csv`), which the move intent names before the rename, and a move
 *   that finds that name taken is left for the next run (whose name is its own).
 *   posix-rename@openssh.com replaces by definition and hardlink@openssh.com is a copy on rclone,
 *   so neither is used.
 * - Before the rename the intake name must still hold the decided bytes (size, mtime and a
 *   read-back sample, sampleCheck.ts), else the staged copy lands and the name is left alone.
 *   Every RENAME answered done is verified from both ends before it counts: the target holds the
 *   decided bytes, and the intake name is no link whose target moved instead (ProFTPD's RENAME
 *   follows links). What arrived but is not the decided file (a rewrite or a link in the instant
 *   between the check and the rename) goes back; the staged copy lands instead.
 * - Temporaries (a copy on its way in, the probe's files) live in this host's work folder of the
 *   final folder, are removed by the move that made them, and a dead mover's are swept.
 */
export class SftpMover {
  private readonly traits = new WeakMap<SftpSession, RenameTraits>();
  private readonly swept = new Set<string>();

  constructor(private readonly port: MoverPort) {}

  async move(name: string, dir: string, decided: DecidedFile): Promise<RouteResult> {
    const source = posix.join(this.port.intakeDir, name);
    const now = await this.look(source);
    if (now.kind === 'gone') throw new FileGoneError(name, { cause: new Error(now.answer) });
    // the name must still hold the decided bytes: a rewrite in the same second with the same size shows only in them
    if (now.kind !== 'file' || !isPinned(remotePin(now.stats), decided.pin) || !(await this.holdsDecided(source, decided))) {
      return { location: await this.landStaged(decided, dir, name), replaced: true };
    }
    const replaces = await this.renameReplaces(dir);
    const target = await this.renameOnto(source, dir, replaces ? taggedName(name, decided.movingRun) : name, !replaces, () =>
      faultPoint('before-rename', name),
    );
    const landing = await this.landing(source, target, decided);
    switch (landing.kind) {
      case 'landed':
        return { location: this.port.location(target), replaced: false };
      case 'not-done':
        throw new Error(`the server answered the RENAME of ${name} into ${dir} as done, but ${landing.why}: left for the next run`);
      case 'copied':
        // the copy is provably the decided bytes, and the intake still has them: only the copy goes
        await this.port.run((sftpSession) => sftpSession.unlink(target));
        throw new Error(
          `the server's RENAME of ${name} copied it into ${dir} and left it in the intake: not a move, left for the next run`,
        );
      case 'link-target':
        await this.port.run((s) => s.rename(target, landing.target));
        this.port.log.error(
          { event: 'moved-through-link', target: landing.target },
          `the intake name became a link and the server's RENAME moved what it points to: put back at ${landing.target}`,
        );
        return { location: await this.landStaged(decided, dir, name), replaced: true };
      case 'not-ours':
        await this.putBack(target, name, decided, replaces);
        this.port.log.warn({ event: 'put-back', what: landing.what }, `what the rename moved was ${landing.what}: put back in the intake`);
        return { location: await this.landStaged(decided, dir, name), replaced: true };
    }
  }

  /**
   * The staged copy, exactly the decided bytes, into `dir`: uploaded into the work folder, then
   * renamed to its landing name and verified there. The upload never outlives this call.
   */
  landStaged(decided: DecidedFile, dir: string, name: string): Promise<string> {
    return this.port.run((s) =>
      this.inWork(s, dir, async (work) => {
        const temp = posix.join(work, moverName());
        try {
          await s.upload(decided.stagedPath, temp);
          const replaces = await this.renameReplaces(dir, s);
          const target = await this.renameOnto(temp, dir, replaces ? taggedName(name, `${decided.movingRun}-staged`) : name, !replaces);
          const landing = await this.landing(temp, target, decided, { session: s, copy: true });
          if (landing.kind !== 'landed') throw new Error(`the staged copy of ${name} did not land in ${dir}: ${describe(landing)}`);
          return this.port.location(target);
        } finally {
          if (await s.exists(temp).catch(() => false)) await s.unlink(temp).catch(() => undefined);
        }
      }),
    );
  }

  /**
   * RENAME of `from` onto `first` in `dir`; where the server refuses an existing target
   * (`refuses`), a refusal because the name is taken moves on to the next free suffix. Returns
   * where it went. A dropped connection whose retry finds the source gone and the target there
   * was this very rename.
   */
  private async renameOnto(from: string, dir: string, first: string, refuses: boolean, before?: () => void): Promise<string> {
    for (let suffix = 0; suffix < MAX_SUFFIX; suffix++) {
      const target = posix.join(dir, refuses ? suffixedName(first, suffix) : first);
      if (await this.port.run((s) => s.exists(target))) {
        if (refuses) continue;
        // a RENAME that replaces must never meet a file: the name unique to this move is taken
        // (planted, or a copy of this very move): the move is left for the next run, under its own name
        throw new Error(`${target} is already there and this server's RENAME would replace it: left for the next run`);
      }
      before?.();
      try {
        await this.port.run((s) => s.rename(from, target));
        return target;
      } catch (err) {
        const [src, dst] = await Promise.all([this.look(from), this.look(target)]);
        if (src.kind === 'gone' && dst.kind === 'file') return target;
        if (src.kind === 'gone') throw new FileGoneError(posix.basename(from), { cause: err });
        if (refuses && dst.kind !== 'gone') continue; // taken meanwhile: refused, never replaced
        throw err;
      }
    }
    throw new Error(`no free name for ${first} in ${dir}`);
  }

  /**
   * What a RENAME of `source` onto `target` that answered done did, from both ends. `copy`: the
   * staged copy, uploaded just now, so its mtime is its own; else the intake's file, which a
   * rename leaves with the size and mtime it was decided with.
   */
  private async landing(
    source: string,
    target: string,
    decided: DecidedFile,
    opts: { session?: SftpSession; copy?: boolean } = {},
  ): Promise<Landing> {
    const session = opts.session;
    const [src, dst] = await Promise.all([this.look(source, session), this.look(target, session)]);
    if (dst.kind === 'gone') {
      return { kind: 'not-done', why: src.kind === 'gone' ? `${target} is not there` : `${target} is not there and ${source} still is` };
    }
    if (src.kind === 'link' && dst.kind === 'file')
      return { kind: 'link-target', target: posix.resolve(posix.dirname(source), src.target) };
    // the intake name still holds the very file decided: whatever arrived, nothing moved
    if (
      src.kind === 'file' &&
      !opts.copy &&
      isPinned(remotePin(src.stats), decided.pin) &&
      (await this.holdsDecided(source, decided, session))
    ) {
      return { kind: 'copied' };
    }
    if (dst.kind !== 'file') return { kind: 'not-ours', what: dst.kind === 'link' ? LINK : dst.what };
    const shape = remotePin(dst.stats);
    const asDecided = opts.copy ? shape.size === decided.pin.size : isPinned(shape, decided.pin);
    if (!asDecided || !(await this.holdsDecided(target, decided, session))) {
      return { kind: 'not-ours', what: 'another file than the one decided (rewritten between the last look and the rename)' };
    }
    if (src.kind === 'file') {
      this.port.log.warn(
        { event: 'intake-name-again', at: source },
        'the intake name holds a file again right after its move (a new upload, or a server that copies): the next run looks at it as a new arrival',
      );
    }
    return { kind: 'landed' };
  }

  /**
   * Whether `path` holds the decided bytes: a sample read back (the whole file when small)
   * against the sample taken while they were read (or, without one, the staged copy's).
   */
  private async holdsDecided(path: string, decided: DecidedFile, session?: SftpSession): Promise<boolean> {
    const ranges = decided.sample?.ranges ?? sampleRanges(decided.pin.size);
    const read = async (s: SftpSession) => {
      const handle = await s.open(path, 'r');
      try {
        return await sampleDigest(ranges, ([position, length]) => s.readFully(handle, path, position, length));
      } finally {
        s.closeHandle(handle);
      }
    };
    const [theirs, ours] = await Promise.all([
      session ? read(session) : this.port.run(read),
      decided.sample?.digest ?? localSampleDigest(decided.stagedPath, ranges),
    ]);
    return theirs === ours;
  }

  /**
   * What a rename moved by mistake, back into the intake: under its own name (or the next free
   * suffix) where the server refuses to replace, under a name unique to this move where it
   * replaces (the name may hold an even newer upload by now).
   */
  private async putBack(from: string, name: string, decided: DecidedFile, replaces: boolean): Promise<void> {
    const first = replaces ? taggedName(name, `${decided.movingRun}-returned`) : name;
    const to = await this.renameOnto(from, this.port.intakeDir, first, !replaces);
    const [src, dst] = await Promise.all([this.look(from), this.look(to)]);
    if (dst.kind === 'gone' || src.kind !== 'gone') throw new Error(`could not put ${from} back into the intake as ${to}`);
  }

  /** Whether this connection's RENAME replaces an existing target: asked once per connection. */
  private async renameReplaces(dir: string, session?: SftpSession): Promise<boolean> {
    const ask = async (s: SftpSession) => {
      let known = this.traits.get(s);
      if (!known) {
        known = await this.inWork(s, dir, (work) => probeRename(s, work));
        this.traits.set(s, known);
        const what = known.answersWithoutDoing
          ? 'this server answered a RENAME as done and did nothing: every rename is checked, and files land under names unique to their move'
          : known.replaces
            ? "this server's RENAME replaces an existing file: files land under names unique to their move"
            : "this server's RENAME refuses an existing file: files land under their own names";
        if (known.answersWithoutDoing) this.port.log.warn({ event: 'sftp-rename', ...known }, what);
        else this.port.log.info({ event: 'sftp-rename', ...known }, what);
      }
      return known.replaces;
    };
    return session ? ask(session) : this.port.run(ask);
  }

  /**
   * `task` in this host's work folder of `dir`, made for it and removed after it (unless another
   * live mover of this host still has something in it). A dead mover's leftovers there are
   * swept first, once per process.
   */
  private async inWork<T>(session: SftpSession, dir: string, task: (work: string) => Promise<T>): Promise<T> {
    const work = posix.join(dir, workFolderName());
    await session.mkdir(work).catch(async (err) => {
      if (!(await session.exists(work))) throw err;
    });
    try {
      await this.sweep(session, work);
      return await task(work);
    } finally {
      await session.rmdir(work).catch(() => undefined);
    }
  }

  private async sweep(session: SftpSession, work: string): Promise<void> {
    if (this.swept.has(work)) return;
    this.swept.add(work);
    for (const e of await session.readdir(work)) {
      if (!isMoverName(e.filename) || !moverIsGone(e.filename)) continue;
      await session.unlink(posix.join(work, e.filename)).then(
        () => this.port.log.info({ event: 'temporary-removed', path: posix.join(work, e.filename) }, 'removed a dead run’s temporary'),
        (err) =>
          this.port.log.warn({ event: 'temporary-not-removed', reason: errorMessage(err) }, 'could not remove a dead run’s temporary'),
      );
    }
  }

  private look(path: string, session?: SftpSession): Promise<RemoteLook> {
    return session ? lookAt(session, path) : this.port.run((s) => lookAt(s, path));
  }
}

function describe(landing: Landing): string {
  switch (landing.kind) {
    case 'landed':
      return 'it landed';
    case 'not-done':
      return landing.why;
    case 'not-ours':
      return `what arrived is ${landing.what}`;
    case 'link-target':
      return 'a link was followed';
    case 'copied':
      return 'it was copied, not moved';
  }
}
