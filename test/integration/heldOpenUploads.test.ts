import { mkdir, readdir } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { TestLoggingSshd } from '../support/loggingSshd.js';
import { rowsWithPrefix, sharedFinanceDatabase, Workspace } from '../support/workspace.js';

/**
 * Where the partner's transfer log is configured, the run asks the SFTP server's own record
 * (a real chrooted OpenSSH internal-sftp logging through rsyslogd) whether an upload is
 * finished: one opened for writing and not yet closed is not ready, however still it stands.
 */

interface RunJson {
  loaded: number;
  not_ready: number;
  rows: number;
  exit_status: number;
  transfer_log_unread?: string;
  files: { name: string; outcome: string; error?: string }[];
}

/** A partner's upload in OpenSSH's protocol, held open between its writes (ssh2's SFTP client). */
class OpenUpload {
  private constructor(
    private readonly client: ssh2.Client,
    private readonly sftp: ssh2.SFTPWrapper,
    private readonly handle: Buffer,
    private written = 0,
  ) {}

  static async start(server: TestLoggingSshd, path: string): Promise<OpenUpload> {
    const client = new ssh2.Client();
    await new Promise<void>((resolve, reject) => {
      client.on('ready', resolve).on('error', reject);
      client.connect({ host: '127.0.0.1', port: server.port, username: server.user, privateKey: readFileSync(server.clientKey) });
    });
    const sftp = await new Promise<ssh2.SFTPWrapper>((resolve, reject) => client.sftp((err, s) => (err ? reject(err) : resolve(s))));
    const handle = await new Promise<Buffer>((resolve, reject) => sftp.open(path, 'w', (err, h) => (err ? reject(err) : resolve(h))));
    return new OpenUpload(client, sftp, handle);
  }

  async write(text: string): Promise<void> {
    const bytes = Buffer.from(text);
    await new Promise<void>((resolve, reject) =>
      this.sftp.write(this.handle, bytes, 0, bytes.length, this.written, (err) => (err ? reject(err) : resolve())),
    );
    this.written += bytes.length;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve, reject) => this.sftp.close(this.handle, (err) => (err ? reject(err) : resolve())));
    this.client.end();
  }
}

const db = sharedFinanceDatabase();
let server: TestLoggingSshd;
beforeAll(async () => {
  server = await TestLoggingSshd.start();
  await mkdir(join(server.jail, 'in'), { mode: 0o755 });
});
afterAll(async () => server?.destroy());

describe('an upload the server shows open is not ready', () => {
  it('held open by a real sftp client: not ready and untouched on the server; after its close the next run loads it whole', async () => {
    const ws = await Workspace.create(db.url);
    const access = ['--sftp-key', server.clientKey, '--known-hosts', server.knownHosts];
    const run = async () => {
      const r = await ws.cli([
        'run',
        '--intake',
        server.url('/in'),
        '--ledger',
        ws.ledger,
        '--stable-for',
        '0',
        '--transfer-log',
        server.logFile,
        ...access,
        '--json',
      ]);
      return { status: r.status, doc: JSON.parse(r.stdout) as RunJson, stderr: r.stderr };
    };
    const name = 'settle_20261201_h01.csv';
    const text = sampleSettlement({ date: '2026-12-01', rows: 6, idPrefix: 'HOPEN' }).text;
    const lines = text.split(/(?<=\n)/);
    // whole lines only: by its bytes alone the part would load as a file of three rows
    const part = lines.slice(0, 4).join('');

    const upload = await OpenUpload.start(server, `/in/${name}`);
    await upload.write(part);
    await server.flushLog(); // the open is in the log before the run reads it

    const open = await run();
    expect(open.status, open.stderr).toBe(0);
    expect(open.doc).toMatchObject({ loaded: 0, not_ready: 1 });
    const [file] = open.doc.files;
    expect(file).toMatchObject({ name, outcome: 'not_ready' });
    expect(file!.error).toMatch(/^the server's transfer log shows it still open since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
    expect(await readdir(join(server.jail, 'in'))).toEqual([name]);
    expect(readFileSync(join(server.jail, 'in', name), 'utf8')).toBe(part);
    expect(ws.ledgerFile(name)).toBeUndefined();
    expect(await rowsWithPrefix(db, 'HOPEN')).toBe(0);

    await upload.write(lines.slice(4).join(''));
    await upload.close();
    await server.flushLog();

    const closed = await run();
    expect(closed.status, closed.stderr).toBe(0);
    expect(closed.doc).toMatchObject({ loaded: 1, not_ready: 0, rows: 6 });
    expect(await readdir(join(server.jail, 'in'))).toEqual([]);
    expect(ws.ledgerFile(name)).toMatchObject({ state: 'loaded', row_count: 6 });
    expect(await rowsWithPrefix(db, 'HOPEN')).toBe(6);
  });

  it('a transfer log that cannot be read is named (exit 1) and the files are judged without it: a finished upload loads', async () => {
    const ws = await Workspace.create(db.url);
    const name = 'settle_20261202_h02.csv';
    await ws.put(name, sampleSettlement({ date: '2026-12-02', rows: 2, idPrefix: 'HGONE' }).text);
    const missing = join(ws.root, 'no-such-sftp.log');
    const r = await ws.run(['--transfer-log', missing, '--json']);
    expect(r.status, r.stderr).toBe(1);
    const doc = JSON.parse(r.stdout) as RunJson;
    expect(doc).toMatchObject({ loaded: 1, exit_status: 1 });
    expect(doc.transfer_log_unread).toContain(missing);
    expect(await ws.files('archive')).toEqual([name]);
    expect(await rowsWithPrefix(db, 'HGONE')).toBe(2);

    await ws.put('settle_20261203_h03.csv', sampleSettlement({ date: '2026-12-03', rows: 1, idPrefix: 'HGONF' }).text);
    const text = await ws.run(['--transfer-log', missing]);
    expect(text.status).toBe(1);
    expect(text.stdout).toMatch(/transfer log not read, files judged without it: transfer log .*no-such-sftp\.log cannot be read/);
  });
});
