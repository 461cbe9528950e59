import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, unlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveSettings } from '../../src/config/settings.js';
import type { Destination } from '../../src/destination.js';
import { FileGoneError, isPinned, NotRegularFileError, type DecidedFile, type Intake } from '../../src/intake/intake.js';
import { openIntake } from '../../src/intake/openIntake.js';
import { stageAndHash } from '../../src/pipeline/stageAndHash.js';
import { MemoryIntake } from '../support/memoryIntake.js';
import { startSftpServer, type TestSftpServer } from '../support/sftpServers.js';

/**
 * The move contract written on src/intake/intake.ts, held for every intake there is: the
 * in-memory intake the pipeline's unit tests run on, the local folder, and the SFTP kind on three
 * real servers (OpenSSH, ProFTPD's mod_sftp, rclone's serve sftp, whose RENAME replaces its
 * target). A new intake kind is added to SUBJECTS and must pass every test here
 * (docs/ARCHITECTURE.md, "Adding an intake kind").
 */

const silent = pino({ level: 'silent' });

/** One intake under test, and the partner's hand on its folder (an upload, a removal, a link). */
interface Subject {
  intake: Intake;
  /**
   * What the server itself does that no client can change: rclone's `serve sftp` hides symbolic
   * links from its listings and answers them as missing, and its RENAME replaces an existing
   * target, so the kind lands each file under a name unique to its move (`settle_x.<run>.csv`).
   */
  hidesLinks?: boolean;
  landsUnderMoveNames?: boolean;
  /** a file already in a final folder (an earlier landing, another process's) */
  plant(to: Destination, name: string, bytes: Buffer): Promise<void>;
  /** the partner uploads a file (its mtime an hour old, a finished upload) */
  upload(name: string, bytes: Buffer): Promise<void>;
  /** the partner puts a symbolic link in the intake */
  link(name: string, target: string): Promise<void>;
  remove(name: string): Promise<void>;
  /** what is in a final folder, name → bytes */
  folder(to: Destination): Promise<Map<string, Buffer>>;
  /** an intake of the same kind whose archive is the intake folder under another path; null where a kind has no paths */
  openAliased(how: 'link' | 'bind'): Promise<Intake> | null;
  close(): Promise<void>;
}

/** A folder tree on this machine: the intake and its three final folders as siblings. */
async function localTree() {
  const root = await mkdtemp(join(tmpdir(), 'settle-contract-'));
  await mkdir(join(root, 'intake'));
  const at = (folder: string, name: string) => join(root, folder, name);
  const mounts: string[] = [];
  return {
    root,
    intakePath: join(root, 'intake'),
    async upload(name: string, bytes: Buffer) {
      await writeFile(at('intake', name), bytes);
      const old = new Date(Date.now() - 3600_000);
      await utimes(at('intake', name), old, old);
    },
    link: (name: string, target: string) => symlink(target, at('intake', name)),
    async plant(to: Destination, name: string, bytes: Buffer) {
      await mkdir(join(root, to), { recursive: true });
      await writeFile(at(to, name), bytes);
    },
    remove: (name: string) => unlink(at('intake', name)),
    async folder(to: Destination) {
      const names = await readdir(join(root, to)).catch(() => [] as string[]);
      // a copy on its way in lives under a temporary name of this host's: not a landed file
      const files = names.filter((name) => !name.startsWith('.'));
      return new Map(await Promise.all(files.map(async (name) => [name, await readFile(at(to, name))] as const)));
    },
    /** the intake under another path: a symbolic link to it, or a bind mount of it (unmounted by close) */
    async aliasOfIntake(how: 'link' | 'bind') {
      const alias = join(root, `${how}-of-intake`);
      if (how === 'link') {
        await symlink(join(root, 'intake'), alias);
      } else {
        await mkdir(alias);
        execFileSync('mount', ['--bind', join(root, 'intake'), alias]);
        mounts.push(alias);
      }
      return alias;
    },
    async cleanUp() {
      for (const mount of mounts.splice(0)) execFileSync('umount', [mount]);
      await rm(root, { recursive: true, force: true });
    },
  };
}

function memorySubject(): Subject {
  const intake = new MemoryIntake();
  return {
    intake,
    upload: async (name, bytes) => void intake.put(name, bytes),
    link: async (name) => void intake.put(name, Buffer.alloc(0), { notRegular: 'a symbolic link, not a regular file' }),
    remove: async (name) => void intake.files.delete(name),
    plant: async (to, name, bytes) => void intake.folders[to].set(name, bytes),
    folder: async (to) => new Map(intake.folders[to]),
    openAliased: () => null,
    close: async () => undefined,
  };
}

async function localSubject(): Promise<Subject> {
  const tree = await localTree();
  const intake = await openIntake(resolveSettings({ intake: tree.intakePath }, {}), silent);
  return {
    intake,
    ...tree,
    openAliased: (how) =>
      tree.aliasOfIntake(how).then((archive) => openIntake(resolveSettings({ intake: tree.intakePath, archive }, {}), silent)),
    close: async () => {
      await intake.close();
      await tree.cleanUp();
    },
  };
}

function sftpSubject(
  server: () => TestSftpServer,
  traits: Pick<Subject, 'hidesLinks' | 'landsUnderMoveNames'> = {},
): () => Promise<Subject> {
  return async () => {
    const tree = await localTree();
    const access = (extra: Record<string, string> = {}) =>
      resolveSettings(
        { intake: server().url(tree.intakePath), sftpKey: server().clientKey, knownHosts: server().knownHosts, ...extra },
        {},
      );
    const intake = await openIntake(access(), silent);
    return {
      intake,
      ...tree,
      ...traits,
      openAliased: (how) => tree.aliasOfIntake(how).then((archive) => openIntake(access({ archive }), silent)),
      close: async () => {
        await intake.close();
        await tree.cleanUp();
      },
    };
  };
}

const servers: Partial<Record<'openssh' | 'proftpd' | 'rclone', TestSftpServer>> = {};
const serverOf = (kind: 'openssh' | 'proftpd' | 'rclone') => () => servers[kind]!;

beforeAll(async () => {
  for (const kind of ['openssh', 'proftpd', 'rclone'] as const) servers[kind] = await startSftpServer(kind);
});
afterAll(async () => {
  for (const server of Object.values(servers)) await server.destroy();
});

const SUBJECTS: [string, () => Promise<Subject>][] = [
  ['the in-memory intake', async () => memorySubject()],
  ['a local folder', localSubject],
  ['SFTP on OpenSSH', sftpSubject(serverOf('openssh'))],
  ['SFTP on ProFTPD', sftpSubject(serverOf('proftpd'))],
  ['SFTP on rclone', sftpSubject(serverOf('rclone'), { hidesLinks: true, landsUnderMoveNames: true })],
];

const bytesOf = (text: string) => Buffer.from(text);
/** What a promise rejects with (it must reject). */
const thrown = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => new Error('expected a rejection'),
    (err: unknown) => err,
  );
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe.each(SUBJECTS)('the move contract on %s', (_label, open) => {
  let subject: Subject;
  let staging: string;
  let seq = 0;

  beforeAll(async () => {
    staging = await mkdtemp(join(tmpdir(), 'settle-contract-staging-'));
  });
  afterAll(async () => rm(staging, { recursive: true, force: true }));

  /** Opens a fresh subject for one test, closed after it. */
  async function fresh(): Promise<Subject> {
    subject = await open();
    return subject;
  }

  /** The file staged as a run stages it (one read, pinned, hashed, its sample taken): the decided file. */
  async function decide(s: Subject, name: string, movingRun = 'r-contract'): Promise<DecidedFile> {
    const entry = (await s.intake.list()).find((e) => e.name === name)!;
    const staged = await stageAndHash(s.intake, entry, staging, ++seq);
    if (staged.kind !== 'staged') throw new Error(`${name} was not staged: ${JSON.stringify(staged)}`);
    return { pin: staged.pin, stagedPath: staged.path, sha256: staged.sha256, movingRun, sample: staged.sample };
  }

  const withSubject = (test: (s: Subject) => Promise<void>) => async () => {
    const s = await fresh();
    try {
      await test(s);
    } finally {
      await subject.close();
    }
  };

  it(
    'lists every name with its size, names a link as not a regular file rather than hiding it, and stat says when a name is gone',
    withSubject(async (s) => {
      await s.upload('settle_a.csv', bytesOf('a,1\n'));
      await s.upload('settle_b.csv', bytesOf('bb,22\n'));
      await s.link('settle_link.csv', '/etc/hostname');
      const listed = new Map((await s.intake.list()).map((entry) => [entry.name, entry]));
      expect([...listed.keys()].sort()).toEqual(['settle_a.csv', 'settle_b.csv', ...(s.hidesLinks ? [] : ['settle_link.csv'])]);
      expect(listed.get('settle_a.csv')).toMatchObject({ size: 4 });
      expect(listed.get('settle_b.csv')).toMatchObject({ size: 6 });
      expect(listed.get('settle_a.csv')!.notRegular).toBeUndefined();
      if (!s.hidesLinks) expect(listed.get('settle_link.csv')!.notRegular).toMatch(/not a regular file/);
      expect(await s.intake.stat('settle_a.csv')).toMatchObject({ name: 'settle_a.csv', size: 4 });
      await s.remove('settle_a.csv');
      expect(await s.intake.stat('settle_a.csv')).toBeNull();
    }),
  );

  it(
    'pins a file once: its bytes from the open file, current() the pin until the name is rewritten; a link and a gone name are refused',
    withSubject(async (s) => {
      await s.upload('settle_a.csv', bytesOf('id,amount\n1,10.00\n'));
      const pinned = await s.intake.pin('settle_a.csv');
      const chunks: Buffer[] = [];
      for await (const chunk of pinned.stream) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).toString()).toBe('id,amount\n1,10.00\n');
      expect(isPinned(await pinned.current(), pinned.pin)).toBe(true);
      await pinned.close();

      await s.link('settle_link.csv', '/etc/hostname');
      // never followed: refused as a link, or (where the server hides links) as a name not there
      expect(await thrown(s.intake.pin('settle_link.csv'))).toBeInstanceOf(s.hidesLinks ? FileGoneError : NotRegularFileError);
      expect(await thrown(s.intake.pin('settle_none.csv'))).toBeInstanceOf(FileGoneError);
    }),
  );

  it(
    'routes a decided file out of the intake: the very bytes land in the final folder under its name, the intake no longer has it',
    withSubject(async (s) => {
      const bytes = bytesOf('id,amount\n1,10.00\n');
      await s.upload('settle_a.csv', bytes);
      const decided = await decide(s, 'settle_a.csv');
      expect(decided.sha256).toBe(sha256(bytes));
      const routed = await s.intake.route('settle_a.csv', 'archive', decided);
      expect(routed.replaced).toBe(false);
      expect((await s.intake.list()).map((entry) => entry.name)).toEqual([]);
      const landedAs = s.landsUnderMoveNames ? 'settle_a.r-contract.csv' : 'settle_a.csv';
      expect([...(await s.folder('archive'))]).toEqual([[landedAs, bytes]]);
      expect(routed.location.endsWith(`archive/${landedAs}`)).toBe(true);
      expect(await s.intake.landedShape(routed.location)).toMatch(/^18:[\d.]+$/);
    }),
  );

  it(
    'never overwrites: a file already at the landing name keeps its bytes; the decided file lands beside it, or stays for the next run',
    withSubject(async (s) => {
      const there = bytesOf('id,amount\n1,10.00\n');
      const decidedBytes = bytesOf('id,amount\n2,20.00\n');
      // what is already at the name the move would take: the file's own name, or its move's name
      const landing = s.landsUnderMoveNames ? 'settle_a.r-clash.csv' : 'settle_a.csv';
      await s.plant('duplicates', landing, there);
      await s.upload('settle_a.csv', decidedBytes);
      const routed = await s.intake
        .route('settle_a.csv', 'duplicates', await decide(s, 'settle_a.csv', 'r-clash'))
        .catch((err: Error) => err);
      const landed = await s.folder('duplicates');
      expect(landed.get(landing)).toEqual(there);
      if (s.landsUnderMoveNames) {
        // a RENAME that replaces cannot land beside a taken name: the move is refused, the file stays
        expect(String(routed)).toMatch(/already there and this server's RENAME would replace it/);
        expect(landed.size).toBe(1);
        expect((await s.intake.list()).map((entry) => entry.name)).toEqual(['settle_a.csv']);
        return;
      }
      expect(landed.size).toBe(2);
      const [otherName, otherBytes] = [...landed].find(([name]) => name !== landing)!;
      expect(otherName).toMatch(/^settle_a\..+\.csv$/);
      expect(otherBytes).toEqual(decidedBytes);
      expect((routed as { location: string }).location.endsWith(`duplicates/${otherName}`)).toBe(true);
    }),
  );

  it(
    'moves only the bytes decided: a name rewritten after its read stays for the next run, the staged copy lands instead (replaced)',
    withSubject(async (s) => {
      const decidedBytes = bytesOf('id,amount\n1,10.00\n');
      const reupload = bytesOf('id,amount\n1,10.00\n2,20.00\n');
      await s.upload('settle_a.csv', decidedBytes);
      const decided = await decide(s, 'settle_a.csv');
      await s.upload('settle_a.csv', reupload);
      const routed = await s.intake.route('settle_a.csv', 'archive', decided);
      expect(routed.replaced).toBe(true);
      expect([...(await s.folder('archive')).values()]).toEqual([decidedBytes]);
      const left = (await s.intake.list()).map((entry) => [entry.name, entry.size]);
      expect(left).toEqual([['settle_a.csv', reupload.length]]);
    }),
  );

  it(
    'a decided name gone before its move is FileGoneError, and keepStaged lands the staged copy without overwriting',
    withSubject(async (s) => {
      const bytes = bytesOf('id,amount\n1,10.00\n');
      await s.upload('settle_a.csv', bytes);
      const decided = await decide(s, 'settle_a.csv');
      await s.remove('settle_a.csv');
      expect(await thrown(s.intake.route('settle_a.csv', 'archive', decided))).toBeInstanceOf(FileGoneError);
      const there = bytesOf('another file, kept as it is\n');
      await s.plant('archive', 'settle_a.csv', there);
      const kept = await s.intake.keepStaged('settle_a.csv', 'archive', decided);
      const archive = await s.folder('archive');
      expect(archive.size).toBe(2);
      expect(archive.get('settle_a.csv')).toEqual(there);
      const [keptName, keptBytes] = [...archive].find(([name]) => name !== 'settle_a.csv')!;
      expect(keptBytes).toEqual(bytes);
      expect(kept.endsWith(`archive/${keptName}`)).toBe(true);
    }),
  );

  it(
    'finds a move again after a crash: findLanded gives where route put the bytes, null where they are not',
    withSubject(async (s) => {
      const bytes = bytesOf('id,amount\n1,10.00\n');
      await s.upload('settle_a.csv', bytes);
      const decided = await decide(s, 'settle_a.csv', 'r-found');
      expect(await s.intake.findLanded('settle_a.csv', 'archive', decided.sha256, bytes.length, 'r-found')).toBeNull();
      const routed = await s.intake.route('settle_a.csv', 'archive', decided);
      expect(await s.intake.findLanded('settle_a.csv', 'archive', decided.sha256, bytes.length, 'r-found')).toBe(routed.location);
      expect(await s.intake.findLanded('settle_a.csv', 'rejected', decided.sha256, bytes.length, 'r-found')).toBeNull();
      expect(await s.intake.findLanded('settle_a.csv', 'archive', 'f'.repeat(64), bytes.length, 'r-found')).toBeNull();
      expect(await s.intake.landedShape(`${routed.location}.none`)).toBeNull();
    }),
  );

  /** An intake opened with a final folder that is the intake under another path: refused at open, or at least never moved into. */
  async function expectAliasRefused(s: Subject, aliased: Promise<Intake>): Promise<void> {
    const opened = await aliased.catch((err: Error) => err);
    if (opened instanceof Error) {
      expect(opened.message).toMatch(/is the intake folder .* under another path/);
    } else {
      // rclone hides links: the alias is a folder the server says is not there, and nothing moves into it
      expect(s.hidesLinks).toBe(true);
      await s.upload('settle_a.csv', bytesOf('id,amount\n1,10.00\n'));
      const routed = await opened.route('settle_a.csv', 'archive', await decide(s, 'settle_a.csv')).catch((err: Error) => err);
      await opened.close();
      expect(routed).toBeInstanceOf(Error);
      expect((await s.intake.list()).map((entry) => [entry.name, entry.size])).toEqual([['settle_a.csv', 18]]);
    }
  }

  it(
    'refuses a final folder that is the intake under another path: a symbolic link to it',
    withSubject(async (s) => {
      const aliased = s.openAliased('link');
      if (aliased === null) return; // a kind without paths has no aliases (the in-memory intake)
      await expectAliasRefused(s, aliased);
    }),
  );

  it.skipIf(process.getuid?.() !== 0)(
    'refuses a final folder that is the intake under another path: a bind mount of it, which no REALPATH shows (needs root)',
    withSubject(async (s) => {
      const aliased = s.openAliased('bind');
      if (aliased === null) return;
      await expectAliasRefused(s, aliased);
    }),
  );
});
