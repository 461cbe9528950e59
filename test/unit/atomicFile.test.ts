import { execFileSync } from 'node:child_process';
import { closeSync, writeSync } from 'node:fs';
import { chmod, chown, lstat, mkdir, mkdtemp, readdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openAppendOnly, writeFileAtomically } from '../../src/atomicFile.js';
import { UsageError } from '../../src/errors.js';
import { checksumLine } from '../../src/report/evidencePack.js';

const folder = () => mkdtemp(join(tmpdir(), 'settle-atomic-'));
const write = (path: string, text: string) => writeFileAtomically(path, text, { mode: 0o644, what: 'the page' });

/** A file someone else owns (the tests run as root, who may give files away). */
const ANOTHER_USER = 4242;

describe('writing a file whole, never through a link', () => {
  it('writes a new file and replaces an old one of ours, leaving no temporary behind', async () => {
    const dir = await folder();
    const page = join(dir, 'page.html');
    await write(page, 'one');
    await write(page, 'two');
    expect(await readFile(page, 'utf8')).toBe('two');
    expect((await stat(page)).mode & 0o777).toBe(0o644 & ~process.umask());
    expect(await readdir(dir)).toEqual(['page.html']);
  });

  it('never writes into a link planted at the old predictable temporary names', async () => {
    const dir = await folder();
    const victim = join(dir, 'victim');
    await writeFile(victim, 'secret');
    for (const planted of ['.page.html.tmp', `.page.html.${process.pid}.tmp`]) await symlink(victim, join(dir, planted));
    await write(join(dir, 'page.html'), 'the page');
    expect(await readFile(victim, 'utf8')).toBe('secret');
    expect(await readFile(join(dir, 'page.html'), 'utf8')).toBe('the page');
  });

  it('refuses a target that is a link, and leaves what it points at alone', async () => {
    const dir = await folder();
    const victim = join(dir, 'victim');
    await writeFile(victim, 'secret');
    await symlink(victim, join(dir, 'page.html'));
    const refused = write(join(dir, 'page.html'), 'the page');
    await expect(refused).rejects.toThrow(UsageError);
    await expect(refused).rejects.toThrow(/page\.html is a symbolic link/);
    expect(await readFile(victim, 'utf8')).toBe('secret');
    expect(await readlink(join(dir, 'page.html'))).toBe(victim);
  });

  it('refuses a target that is not a regular file (a FIFO)', async () => {
    const dir = await folder();
    execFileSync('mkfifo', [join(dir, 'page.html')]);
    await expect(write(join(dir, 'page.html'), 'x')).rejects.toThrow(/exists and is not a regular file/);
    expect((await lstat(join(dir, 'page.html'))).isFIFO()).toBe(true);
  });

  it('refuses a folder every user may write to that is not sticky', async () => {
    const dir = await folder();
    const shared = join(dir, 'shared');
    await mkdir(shared);
    await chmod(shared, 0o777);
    await expect(write(join(shared, 'page.html'), 'x')).rejects.toThrow(/which every user may write to and which is not sticky/);
    expect(await readdir(shared)).toEqual([]);
    // a folder of ours below it is no better: the shared one lets anybody swap ours for a link
    await mkdir(join(shared, 'ours'), { mode: 0o755 });
    await expect(write(join(shared, 'ours', 'page.html'), 'x')).rejects.toThrow(/is under .*shared, which every user may write to/);
    expect(await readdir(join(shared, 'ours'))).toEqual([]);
  });

  it('in a sticky shared folder writes names of its own, and refuses to replace another user’s file', async () => {
    const dir = await folder();
    const shared = join(dir, 'shared');
    await mkdir(shared);
    await chmod(shared, 0o1777);
    await write(join(shared, 'ours.html'), 'ours');
    await write(join(shared, 'ours.html'), 'ours again');
    expect(await readFile(join(shared, 'ours.html'), 'utf8')).toBe('ours again');
    await writeFile(join(shared, 'theirs.html'), 'theirs');
    await chown(join(shared, 'theirs.html'), ANOTHER_USER, ANOTHER_USER);
    await expect(write(join(shared, 'theirs.html'), 'x')).rejects.toThrow(/belongs to another user \(uid 4242\)/);
    expect(await readFile(join(shared, 'theirs.html'), 'utf8')).toBe('theirs');
  });
});

describe('the log, appended to', () => {
  const append = (path: string, line: string) => {
    const fd = openAppendOnly(path, 'log file');
    writeSync(fd, line);
    closeSync(fd);
  };

  it('is created private and appended to, its folders made', async () => {
    const log = join(await folder(), 'logs', 'settle.log');
    append(log, 'one\n');
    append(log, 'two\n');
    expect(await readFile(log, 'utf8')).toBe('one\ntwo\n');
    expect((await stat(log)).mode & 0o777).toBe(0o600);
  });

  it('is never written through a link, into a shared folder that is not sticky, or over another user’s file in a sticky one', async () => {
    const dir = await folder();
    const victim = join(dir, 'victim');
    await writeFile(victim, 'secret');
    await symlink(victim, join(dir, 'settle.log'));
    expect(() => append(join(dir, 'settle.log'), 'x')).toThrow(expect.objectContaining({ code: 'ELOOP' }));
    const shared = join(dir, 'shared');
    await mkdir(shared);
    await chmod(shared, 0o777);
    expect(() => append(join(shared, 'settle.log'), 'x')).toThrow(/which every user may write to and which is not sticky/);
    await chmod(shared, 0o1777);
    await writeFile(join(shared, 'theirs.log'), 'theirs');
    await chown(join(shared, 'theirs.log'), ANOTHER_USER, ANOTHER_USER);
    expect(() => append(join(shared, 'theirs.log'), 'x')).toThrow(/belongs to another user/);
    execFileSync('mkfifo', [join(dir, 'fifo.log')]);
    expect(() => append(join(dir, 'fifo.log'), 'x')).toThrow(expect.objectContaining({ code: 'ENXIO' }));
    expect(await readFile(victim, 'utf8')).toBe('secret');
    expect(await readFile(join(shared, 'theirs.log'), 'utf8')).toBe('theirs');
    expect(await readdir(shared)).toEqual(['theirs.log']);
  });
});

describe('SHA256SUMS lines', () => {
  it('are escaped as GNU sha256sum escapes them, so that sha256sum -c verifies a name with a backslash and a line break', async () => {
    const dir = await folder();
    const names = ['plain.csv', 'back\\slash.csv', 'line\nbreak.csv', 'both\\\nand\r.csv'];
    for (const name of names) await writeFile(join(dir, name), `bytes of ${name}`);
    const ours = names.map((name) =>
      checksumLine(execFileSync('sha256sum', [name], { cwd: dir, encoding: 'utf8' }).match(/[0-9a-f]{64}/)![0], name),
    );
    expect(`${ours.join('\n')}\n`).toBe(execFileSync('sha256sum', names, { cwd: dir, encoding: 'utf8' }));
    await writeFile(join(dir, 'SUMS'), `${ours.join('\n')}\n`);
    expect(execFileSync('sha256sum', ['-c', 'SUMS'], { cwd: dir, encoding: 'utf8' }).match(/: OK$/gm)).toHaveLength(4);
  });
});
