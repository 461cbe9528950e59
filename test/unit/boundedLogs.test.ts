import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { inflateOverrun } from '../../src/delivery/meter.js';
import { GZIP_LOG_LIMITS, LineSplitter, MAX_LINE_BYTES, readTransferLogs, unreadPlaces } from '../../src/transferLog/logFiles.js';
import { logZone } from '../../src/transferLog/logTimes.js';

const dir = mkdtempSync(join(tmpdir(), 'settle-bounded-'));
const file = (name: string, bytes: Buffer | string) => {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
};
const UTC = logZone('UTC').zone;
const xferlog = (name: string) => `Tue Dec 01 02:00:01 2026 1 10.0.0.5 1234 /elsewhere/${name} b _ i r adyen sftp 0 * c`;

/** Each line the splitter gives for these chunks: its text, or `null` and its length when it is over the limit. */
function split(chunks: (string | Buffer)[], maxBytes: number): (string | [null, number])[] {
  const lines: (string | [null, number])[] = [];
  const splitter = new LineSplitter(maxBytes, (line, bytes) => lines.push(line ?? [null, bytes]));
  for (const chunk of chunks) splitter.push(Buffer.from(chunk));
  splitter.end();
  return lines;
}

describe('a log cut into lines by its bytes', () => {
  it('joins a line across chunks (a character split between them too), drops the CR of a CRLF, and gives a last line without a newline', () => {
    const e = Buffer.from('é');
    expect(
      split(
        ['ab', 'c\r\nd', Buffer.concat([Buffer.from('x'), e.subarray(0, 1)]), Buffer.concat([e.subarray(1), Buffer.from('\n\nlast')])],
        100,
      ),
    ).toEqual(['abc', 'dxé', '', 'last']);
    // a lone CR is a character of the line, not its end
    expect(split(['a\rb\n'], 100)).toEqual(['a\rb']);
  });

  it('gives a line over the limit as its length alone, and goes on with the next line', () => {
    expect(split(['12345\n', '123456', '7\nok\n'], 6)).toEqual(['12345', [null, 7], 'ok']);
    // the same, each line within one chunk (decoded where it is)
    expect(split(['12345\n1234567\nok\n1234567'], 6)).toEqual(['12345', [null, 7], 'ok', [null, 7]]);
    // the limit is of the line's own bytes: a CR before its newline is not counted
    expect(split(['123456\r\n'], 6)).toEqual(['123456']);
    // a huge line without a newline: counted, and only its length kept
    const lines = split(
      Array.from({ length: 100 }, () => Buffer.alloc(64 * 1024, 'A')),
      MAX_LINE_BYTES,
    );
    expect(lines).toEqual([[null, 100 * 64 * 1024]]);
  });
});

describe("the deliveries' ratio rule, one function for every decoder", () => {
  const limits = (consumed: number, deliveredSize = 1_000_000) => ({
    maxInflateRatio: 100,
    maxDecodedBytes: 50_000_000,
    deliveredSize,
    consumed: () => consumed,
  });

  it('judges the size, the ratio to the whole file, and past the first MiB the ratio so far', () => {
    expect(inflateOverrun(50_000_001, limits(1_000_000))).toEqual({ limit: 'size' });
    expect(inflateOverrun(30_000_000, limits(1_000_000, 200_000))).toEqual({ limit: 'ratio', compressed: 200_000 });
    // 2 MiB from 1 KB consumed: a bomb, seen long before the whole file's ratio is passed
    expect(inflateOverrun(2 * 1024 * 1024, limits(1000))).toEqual({ limit: 'ratio', compressed: 1000 });
    // within the first MiB the ratio so far is not judged (a header compresses far better than the file)
    expect(inflateOverrun(1024 * 1024, limits(10))).toBeNull();
    expect(inflateOverrun(20_000_000, limits(300_000))).toBeNull();
  });
});

describe('transfer logs read within bounds', () => {
  it('refuses a FIFO put where a log was (a log read again, or a name swapped after the folder was listed) without waiting for a writer', async () => {
    const fifo = join(dir, 'sftp.log.fifo');
    execFileSync('mkfifo', [fifo]);
    await expect(readTransferLogs([fifo], UTC)).rejects.toThrow(/transfer log .*sftp\.log\.fifo cannot be read: not a regular file/);
  });

  it('counts and names a line over the limit, reads the lines around it, and says it may hide an upload', async () => {
    const long = `${xferlog('a.csv').slice(0, 60)}${'x'.repeat(MAX_LINE_BYTES)} b _ i r adyen sftp 0 * c`;
    const path = file('xferlog', `${xferlog('one.csv')}\n${long}\n${xferlog('two.csv')}\n`);
    const { events, files } = await readTransferLogs([path], UTC);
    expect(events.map((e) => (e.kind === 'upload' ? e.path : e.kind))).toEqual(['/elsewhere/one.csv', '/elsewhere/two.csv']);
    expect(files[0]).toMatchObject({ format: 'xferlog', lines: 3, transferLines: 2, overLong: 1, stopped: null });
    expect(files[0]!.overLongQuoted).toEqual([{ line: 2, bytes: Buffer.byteLength(long) }]);
    expect(unreadPlaces(files[0]!)).toEqual([
      {
        file: path,
        line: 2,
        message: `transfer log ${path}: a line over the ${MAX_LINE_BYTES} bytes a line may have (line 2: ${Buffer.byteLength(long)} bytes), not read: it may hide an upload`,
      },
    ]);
  });

  it('stops a gzip bomb after its log lines (a member of 16 MiB of zeros, repeated): where, and why', async () => {
    const bomb = gzipSync(Buffer.alloc(16 * 1024 * 1024), { level: 9 });
    const path = file('xferlog.1.gz', Buffer.concat([gzipSync(`${xferlog('before.csv')}\n`), ...Array.from({ length: 64 }, () => bomb)]));
    const { events, files } = await readTransferLogs([path], UTC);
    expect(events).toHaveLength(1);
    const report = files[0]!;
    expect(report).toMatchObject({ format: 'xferlog', lines: 1, transferLines: 1 });
    expect(report.stopped).toMatchObject({ line: 2 });
    expect(report.stopped!.reason).toMatch(
      new RegExp(
        `^it inflates more than ${GZIP_LOG_LIMITS.maxInflateRatio}:1 \\(\\d+ bytes from \\d+ compressed\\): a decompression bomb$`,
      ),
    );
    expect(unreadPlaces(report).map((u) => u.line)).toEqual([2]);
  });

  it('reads a repeated sftp-server message as often as syslog says, up to a thousand times; a line claiming millions is unreadable, not unpacked', async () => {
    const repeated = (times: number) =>
      `Dec  1 02:00:01 sftp1 sftp-server[4242]: message repeated ${times} times: [ close "/in/x.csv" bytes read 0 written 5]`;
    const path = file('sftp.log', `${repeated(3)}\n${repeated(3_000_000)}\n`);
    const { events, files } = await readTransferLogs([path], UTC);
    expect(events).toHaveLength(3);
    expect(files[0]).toMatchObject({ format: 'openssh-syslog', lines: 2, transferLines: 1, unreadable: 1 });
    expect(files[0]!.unreadableQuoted.map((u) => u.line)).toEqual([2]);
  });

  it('reads a gzipped log of several members whole, and a file of nothing but one over-long line as of no known format', async () => {
    const lines = Array.from({ length: 3000 }, (_, i) => `${xferlog(`f${i}.csv`)}\n`);
    const rotated = file('multi.gz', Buffer.concat([gzipSync(lines.slice(0, 1000).join('')), gzipSync(lines.slice(1000).join(''))]));
    const read = await readTransferLogs([rotated], UTC);
    expect(read.events).toHaveLength(3000);
    expect(read.files[0]).toMatchObject({ lines: 3000, overLong: 0, stopped: null });

    const blob = file('blob.log', 'A'.repeat(MAX_LINE_BYTES + 1));
    const { files } = await readTransferLogs([blob], UTC);
    expect(files[0]).toMatchObject({ format: 'unknown', lines: 1, overLong: 1 });
  });
});
