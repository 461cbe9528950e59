import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { uploadsHeldOpen, type ServerLogOfIntake } from '../../src/transferLog/openUploads.js';

/** `internal-sftp[pid]: message` lines of one session, a second apart. */
const session = (pid: number, user: string, messages: string[], startSecond = 0) => [
  `Dec  1 02:00:${String(startSecond).padStart(2, '0')} host internal-sftp[${pid}]: session opened for local user ${user} from [10.0.0.5]`,
  ...messages.map((m, i) => `Dec  1 02:00:${String(startSecond + i + 1).padStart(2, '0')} host internal-sftp[${pid}]: ${m}`),
];

async function heldOpen(lines: string[], settings: Partial<ServerLogOfIntake> = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'settle-open-'));
  const file = join(dir, 'sftp.log');
  await writeFile(file, `${lines.join('\n')}\n`);
  return uploadsHeldOpen({ files: [file], timeZone: 'UTC', root: '/', folder: '/in', ...settings });
}

const names = (answer: Awaited<ReturnType<typeof uploadsHeldOpen>>) => (answer.kind === 'read' ? [...answer.open.keys()] : answer.problem);

describe("the uploads a server's log shows still open", () => {
  it('is an open for writing without its close, in a session that has not ended, in the intake', async () => {
    const answer = await heldOpen([
      ...session(7, 'adyen', [
        'open "/in/settle_open.csv" flags WRITE,CREATE,TRUNCATE mode 0644',
        'open "/in/settle_done.csv" flags WRITE,CREATE,TRUNCATE mode 0644',
        'close "/in/settle_done.csv" bytes read 0 written 10',
        'open "/in/settle_read.csv" flags READ mode 0666',
        'open "/elsewhere/settle_other.csv" flags WRITE,CREATE,TRUNCATE mode 0644',
      ]),
      // a session that ended (its handles forced closed) leaves nothing open
      ...session(8, 'adyen', [
        'open "/in/settle_cut.csv" flags WRITE,CREATE,TRUNCATE mode 0644',
        'session closed for local user adyen from [10.0.0.5]',
      ]),
    ]);
    expect(names(answer)).toEqual(['settle_open.csv']);
    expect(answer.kind === 'read' && answer.open.get('settle_open.csv')!.reason).toMatch(
      /^the server's transfer log shows it still open since 2026-12-01 02:00:01 UTC \(opened for writing by adyen, not closed: .*sftp\.log line 2\)$/,
    );
  });

  it("takes a chroot's paths from its root, and a relative name in the intake", async () => {
    const lines = session(9, 'adyen', [
      'open "/in/settle_a.csv" flags WRITE,CREATE,TRUNCATE mode 0644',
      'open "settle_b.csv" flags WRITE,APPEND mode 0644',
    ]);
    expect(names(await heldOpen(lines, { root: '/srv/sftp/adyen', folder: '/srv/sftp/adyen/in' }))).toEqual([
      'settle_a.csv',
      'settle_b.csv',
    ]);
    expect(names(await heldOpen(lines, { folder: '/srv/sftp/adyen/in' }))).toEqual(['settle_b.csv']);
  });

  it('says why when the log cannot be read, and shows nothing open', async () => {
    const answer = await uploadsHeldOpen({ files: ['/no/such/sftp.log'], timeZone: 'UTC', root: '/', folder: '/in' });
    expect(answer).toEqual({ kind: 'unread', problem: expect.stringContaining('transfer log /no/such/sftp.log cannot be read') });
  });
});
