import * as fs from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join, posix } from 'node:path';
import ssh2, { type Connection, type SFTPWrapper } from 'ssh2';
import { freePort } from './postgresServer.js';
import { makeServerKeys, type TestSftpServer } from './sftpServers.js';

const { Server, utils } = ssh2;
const { STATUS_CODE, flagsToString } = utils.sftp;

/**
 * What the hostile server does wrong, for answers no real server gives on demand. Set for a
 * whole run (`behave`) or from a test hook at an exact step (`behaveCommand` writes the
 * server's control file, read again at every request).
 */
export interface HostileBehaviour {
  /** request types (OPEN, READ, READDIR, RENAME, …) never answered; `*`: none at all. SSH keepalives still are. */
  silent?: string[];
  /** READs are answered one at a time, each with at most `bytes`, `everyMs` after the one before */
  trickle?: { bytes: number; everyMs: number };
  /** RENAME answers OK and does nothing */
  renameNoop?: boolean;
  /** LSTAT answers for what a link points to, as STAT does (ProFTPD's does) */
  lstatFollows?: boolean;
  /** RENAME of a link moves what it points to (ProFTPD's does) */
  renameFollows?: boolean;
  /** RENAME replaces an existing target (rclone's does); by default it refuses, as OpenSSH's does */
  renameOverwrites?: boolean;
  /** RENAME copies and leaves the source where it was */
  renameCopies?: boolean;
  /** READDIR gives a link's target's attributes (its `ls -l` line stays the link's own) */
  listFollows?: boolean;
  /**
   * once a MKDIR of a path with this text in it is done and answered, the connection is dropped
   * at its next request (that request not answered); once per server, which goes on listening
   */
  dropAfterMkdir?: string;
}

type Attrs = { mode: number; uid: number; gid: number; size: number; atime: number; mtime: number };

const attrsOf = (s: fs.Stats): Attrs => ({
  mode: s.mode,
  uid: s.uid,
  gid: s.gid,
  size: s.size,
  atime: Math.floor(s.atimeMs / 1000),
  mtime: Math.floor(s.mtimeMs / 1000),
});

/** `ls -l`'s line for an entry, as servers send it with READDIR. */
function longname(name: string, s: fs.Stats): string {
  const type = s.isSymbolicLink() ? 'l' : s.isDirectory() ? 'd' : s.isFIFO() ? 'p' : s.isSocket() ? 's' : '-';
  const bits = 'rwxrwxrwx'
    .split('')
    .map((c, i) => (s.mode & (1 << (8 - i)) ? c : '-'))
    .join('');
  return `${type}${bits}    1 ${s.uid} ${s.gid} ${String(s.size).padStart(8)} Jan  1 00:00 ${name}`;
}

function statusOf(err: unknown): number {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return STATUS_CODE.NO_SUCH_FILE;
  if (code === 'EACCES' || code === 'EPERM') return STATUS_CODE.PERMISSION_DENIED;
  return STATUS_CODE.FAILURE;
}

interface OpenFile {
  fd?: number;
  dir?: { path: string; sent: boolean };
}

/**
 * A deliberately hostile SFTP server on ssh2's server mode, in the test's own process, over
 * this machine's file system: it behaves like OpenSSH (the entry's own attributes, no
 * overwriting RENAME) until told otherwise (HostileBehaviour). No extensions.
 */
export class HostileSftpServer implements TestSftpServer {
  readonly kind = 'hostile';
  readonly user = userInfo().username;
  private behaviour: HostileBehaviour = {};
  private server: InstanceType<typeof Server> | undefined;
  private readonly connections = new Set<Connection>();

  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly hostKey: Buffer,
    private readonly clientPub: ReturnType<typeof utils.parseKey>,
    readonly clientKey: string,
    readonly knownHosts: string,
    readonly hostKeyPub: string,
  ) {}

  /** `hostKeyType: 'dsa'`: a server that offers only a DSA host key */
  static async start(opts: { hostKeyType?: 'ed25519' | 'dsa' } = {}): Promise<HostileSftpServer> {
    const dir = await mkdtemp(join(tmpdir(), 'settle-hostile-'));
    await chmod(dir, 0o755);
    const port = await freePort();
    const keys = await makeServerKeys(dir, port, opts.hostKeyType);
    const clientPub = utils.parseKey(await readFile(`${keys.clientKey}.pub`));
    if (clientPub instanceof Error) throw clientPub;
    const server = new HostileSftpServer(
      dir,
      port,
      await readFile(keys.hostKey),
      clientPub,
      keys.clientKey,
      keys.knownHosts,
      keys.hostKeyPub,
    );
    await server.resume();
    return server;
  }

  /** What the server does wrong from now on (a whole run); `{}`: nothing. */
  behave(b: HostileBehaviour): void {
    this.behaviour = b;
    fs.rmSync(this.controlFile, { force: true });
  }

  /** A shell command for a test hook: from that step on, the server does `b` wrong. */
  behaveCommand(b: HostileBehaviour): string {
    return `printf '%s' '${JSON.stringify(b)}' > '${this.controlFile}'`;
  }

  private get controlFile(): string {
    return join(this.dir, 'behaviour.json');
  }

  /** What the server does wrong now: the run's behaviour and the control file's. */
  now(): HostileBehaviour {
    try {
      return { ...this.behaviour, ...(JSON.parse(fs.readFileSync(this.controlFile, 'utf8')) as HostileBehaviour) };
    } catch {
      return this.behaviour;
    }
  }

  url(path: string): string {
    return `sftp://${this.user}@127.0.0.1:${this.port}${path}`;
  }

  freezeCommand(): string {
    return this.behaveCommand({ silent: ['*'] });
  }

  async thaw(): Promise<void> {
    await rm(this.controlFile, { force: true });
  }

  /** The hook only marks the cut: the server drops every connection and stops listening at the next request it sees. */
  cutCommand(opts: { cut: 'server'; once: string }): string {
    return `[ -e '${opts.once}' ] && exit 0; touch '${opts.once}'; touch '${join(this.dir, 'cut')}'`;
  }

  async resume(): Promise<void> {
    fs.rmSync(join(this.dir, 'cut'), { force: true });
    const server = new Server({ hostKeys: [this.hostKey] }, (client) => this.serve(client));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
  }

  async stop(): Promise<void> {
    for (const c of this.connections) c.end();
    this.connections.clear();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async destroy(): Promise<void> {
    await this.stop();
    await rm(this.dir, { recursive: true, force: true });
  }

  private serve(client: Connection): void {
    (client as unknown as { setNoDelay(on: boolean): void }).setNoDelay(true); // as the client: no 40 ms of Nagle per answer
    this.connections.add(client);
    client.on('close', () => this.connections.delete(client));
    client.on('error', () => undefined);
    client.on('authentication', (ctx) => {
      const key = this.clientPub as Exclude<typeof this.clientPub, Error | unknown[]>;
      if (ctx.method === 'publickey' && ctx.key.algo === key.type && ctx.key.data.equals(key.getPublicSSH())) {
        if (!ctx.signature || key.verify(ctx.blob!, ctx.signature, ctx.hashAlgo) === true) return ctx.accept();
      }
      ctx.reject(['publickey']);
    });
    client.on('ready', () => {
      client.on('session', (accept) => {
        accept().on('sftp', (acceptSftp) => this.answer(acceptSftp(), client));
      });
    });
  }

  /** One SFTP channel: every request answered from the file system, unless the behaviour says otherwise. */
  private answer(sftp: SFTPWrapper, client: Connection): void {
    let dropNext = false;
    const open = new Map<number, OpenFile>();
    let nextHandle = 1;
    const newHandle = (f: OpenFile) => {
      const id = nextHandle++;
      open.set(id, f);
      const h = Buffer.alloc(4);
      h.writeUInt32BE(id);
      return h;
    };
    let trickled = Promise.resolve();
    const fileOf = (h: Buffer) => (h.length === 4 ? open.get(h.readUInt32BE(0)) : undefined);
    const fail = (reqid: number, err: unknown) => sftp.status(reqid, statusOf(err), (err as Error).message);
    const attempt = (reqid: number, fn: () => void) => {
      try {
        fn();
      } catch (err) {
        fail(reqid, err);
      }
    };
    /** Whether to answer this request at all: a cut drops the connection, a silent type is never answered. */
    const answers = (type: string): boolean => {
      if (fs.existsSync(join(this.dir, 'cut'))) {
        void this.stop();
        return false;
      }
      if (dropNext) {
        client.end();
        return false;
      }
      const silent = this.now().silent ?? [];
      return !(silent.includes('*') || silent.includes(type));
    };

    sftp.on('REALPATH', (reqid, path) => {
      if (!answers('REALPATH')) return;
      const full = posix.resolve('/', path);
      sftp.name(reqid, [{ filename: full, longname: full, attrs: {} as Attrs }]);
    });
    const stat = (type: string, follow: (b: HostileBehaviour) => boolean) => (reqid: number, path: string) => {
      if (!answers(type)) return;
      attempt(reqid, () => sftp.attrs(reqid, attrsOf(follow(this.now()) ? fs.statSync(path) : fs.lstatSync(path))));
    };
    sftp.on(
      'STAT',
      stat('STAT', () => true),
    );
    sftp.on(
      'LSTAT',
      stat('LSTAT', (b) => b.lstatFollows === true),
    );
    sftp.on('FSTAT', (reqid, handle) => {
      if (!answers('FSTAT')) return;
      const f = fileOf(handle);
      attempt(reqid, () => sftp.attrs(reqid, attrsOf(fs.fstatSync(f!.fd!))));
    });
    sftp.on('OPEN', (reqid, path, flags, attrs) => {
      if (!answers('OPEN')) return;
      attempt(reqid, () => {
        const how = flagsToString(flags);
        if (!how) throw new Error(`flags ${flags} not understood`);
        sftp.handle(reqid, newHandle({ fd: fs.openSync(path, how, attrs?.mode ?? 0o644) }));
      });
    });
    sftp.on('READ', (reqid, handle, offset, length) => {
      if (!answers('READ')) return;
      const trickle = this.now().trickle;
      const send = () =>
        attempt(reqid, () => {
          const f = fileOf(handle);
          const buf = Buffer.alloc(trickle ? Math.min(length, trickle.bytes) : length);
          const n = fs.readSync(f!.fd!, buf, 0, buf.length, offset);
          if (n === 0) sftp.status(reqid, STATUS_CODE.EOF);
          else sftp.data(reqid, buf.subarray(0, n));
        });
      // one answer at a time, however many READs are in flight: a trickle, not a slow parallel stream
      if (trickle) trickled = trickled.then(() => new Promise((r) => setTimeout(r, trickle.everyMs))).then(send);
      else send();
    });
    sftp.on('WRITE', (reqid, handle, offset, data) => {
      if (!answers('WRITE')) return;
      attempt(reqid, () => {
        fs.writeSync(fileOf(handle)!.fd!, data, 0, data.length, offset);
        sftp.status(reqid, STATUS_CODE.OK);
      });
    });
    sftp.on('CLOSE', (reqid, handle) => {
      if (!answers('CLOSE')) return;
      attempt(reqid, () => {
        const f = fileOf(handle);
        if (f?.fd !== undefined) fs.closeSync(f.fd);
        open.delete(handle.readUInt32BE(0));
        sftp.status(reqid, STATUS_CODE.OK);
      });
    });
    sftp.on('OPENDIR', (reqid, path) => {
      if (!answers('OPENDIR')) return;
      attempt(reqid, () => {
        if (!fs.statSync(path).isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'ENOTDIR' });
        sftp.handle(reqid, newHandle({ dir: { path, sent: false } }));
      });
    });
    sftp.on('READDIR', (reqid, handle) => {
      if (!answers('READDIR')) return;
      attempt(reqid, () => {
        const d = fileOf(handle)?.dir;
        if (!d) throw new Error('not a folder handle');
        if (d.sent) return sftp.status(reqid, STATUS_CODE.EOF);
        d.sent = true;
        const follows = this.now().listFollows === true;
        const names = fs.readdirSync(d.path).map((filename) => {
          const own = fs.lstatSync(join(d.path, filename));
          const attrs = attrsOf(follows && own.isSymbolicLink() ? fs.statSync(join(d.path, filename)) : own);
          return { filename, longname: longname(filename, own), attrs };
        });
        sftp.name(reqid, names);
      });
    });
    sftp.on('READLINK', (reqid, path) => {
      if (!answers('READLINK')) return;
      attempt(reqid, () => {
        const target = fs.readlinkSync(path);
        sftp.name(reqid, [{ filename: target, longname: target, attrs: {} as Attrs }]);
      });
    });
    sftp.on('RENAME', (reqid, from, to) => {
      if (!answers('RENAME')) return;
      const b = this.now();
      if (b.renameNoop) return sftp.status(reqid, STATUS_CODE.OK);
      attempt(reqid, () => {
        if (!b.renameOverwrites && fs.existsSync(to)) throw new Error('target exists');
        if (b.renameCopies) fs.copyFileSync(from, to, fs.constants.COPYFILE_EXCL);
        else fs.renameSync(b.renameFollows ? fs.realpathSync(from) : from, to);
        sftp.status(reqid, STATUS_CODE.OK);
      });
    });
    const simple = (type: string, fn: (path: string) => void) => (reqid: number, path: string) => {
      if (!answers(type)) return;
      attempt(reqid, () => {
        fn(path);
        sftp.status(reqid, STATUS_CODE.OK);
      });
    };
    sftp.on(
      'REMOVE',
      simple('REMOVE', (p) => fs.unlinkSync(p)),
    );
    sftp.on(
      'RMDIR',
      simple('RMDIR', (p) => fs.rmdirSync(p)),
    );
    sftp.on('MKDIR', (reqid, path, attrs) =>
      simple('MKDIR', (p) => {
        fs.mkdirSync(p, attrs?.mode ?? 0o755);
        const drop = this.now().dropAfterMkdir;
        if (drop === undefined || !p.includes(drop)) return;
        this.behave({ ...this.now(), dropAfterMkdir: undefined });
        dropNext = true;
      })(reqid, path),
    );
    sftp.on('SETSTAT', (reqid) => answers('SETSTAT') && sftp.status(reqid, STATUS_CODE.OK));
    sftp.on('FSETSTAT', (reqid) => answers('FSETSTAT') && sftp.status(reqid, STATUS_CODE.OK));
  }
}
