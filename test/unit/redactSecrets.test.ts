import { describe, expect, it } from 'vitest';
import { conventionalLogLine } from '../../src/cli/logger.js';
import { redactSecrets } from '../../src/redactSecrets.js';

describe('secrets in printed and stored text', () => {
  it.each([
    ['postgres://ingest:S3CRET@db.example:5432/finance?sslmode=require', 'postgres://ingest:***@db.example:5432/finance?sslmode=require'],
    ['postgres://ingest@db/finance?password=S3CRET&sslmode=require', 'postgres://ingest@db/finance?password=***&sslmode=require'],
    [
      'postgresql://ingest@db/finance?sslmode=require&sslpassword=S3CRET#x',
      'postgresql://ingest@db/finance?sslmode=require&sslpassword=***#x',
    ],
    ["host=db user=ingest password='S3 CR\\'ET' dbname=finance", 'host=db user=ingest password=*** dbname=finance'],
    ['host=db password = S3CRET dbname=finance', 'host=db password = *** dbname=finance'],
    ['PGPASSWORD=S3CRET psql', 'PGPASSWORD=*** psql'],
    ['finance database postgres://u:p@ss/w@rd@host/db is unreachable', 'finance database postgres://u:***@host/db is unreachable'],
    ['postgres://user@corp:S3CRET@host/db', 'postgres://user@corp:***@host/db'],
    [
      'finance database "postgres://u:S3cr3t xyz@host/db" is not a usable URL',
      'finance database "postgres://u:***@host/db" is not a usable URL',
    ],
    ['postgres://u:pa@ ss word@host/db refused', 'postgres://u:***@host/db refused'],
  ])('hides the password in %s', (text, expected) => {
    expect(redactSecrets(text)).toBe(expected);
    expect(redactSecrets(expected)).toBe(expected);
  });

  it.each([
    'finance database postgres://host:5432/db is unreachable: connect ECONNREFUSED 127.0.0.1:5432',
    'intake sftp://partner@sftp.example/outbox: write to ops@example.com',
    'rejected settle_a01.csv: line 17, field net_amount: "12.5O" is not a decimal',
  ])('leaves %s as it is', (text) => {
    expect(redactSecrets(text)).toBe(text);
  });
});

describe('log lines (the JSON log)', () => {
  it('lose the secrets of every string, and stay one valid JSON line', () => {
    const line = `${JSON.stringify({
      level: 50,
      msg: 'failed: postgres://ingest:S3CRET@db/finance is unreachable',
      reason: 'password=S3CRET",',
      nested: { urls: ['postgres://db/finance?password=S3CRET'] },
      rows: 3,
    })}\n`;
    const out = conventionalLogLine(line);
    expect(out).not.toContain('S3CRET');
    expect(out.endsWith('}\n')).toBe(true);
    expect(JSON.parse(out)).toEqual({
      level: 50,
      msg: 'failed: postgres://ingest:***@db/finance is unreachable',
      reason: 'password=***',
      nested: { urls: ['postgres://db/finance?password=***'] },
      rows: 3,
    });
  });

  it('pass unchanged when they hold nothing to hide and follow the convention already', () => {
    const line = '{"level":30,"time":"2026-03-14T02:00:03.000Z","msg":"loaded 12 rows"}\n';
    expect(conventionalLogLine(line)).toBe(line);
  });

  it('have snake_case keys at every depth, as --json has', () => {
    const line = `${JSON.stringify({ level: 40, contentSha256: 'ab', duplicateOf: { name: 'a01', matchKind: 'bytes' }, skippedRows: 2 })}\n`;
    expect(JSON.parse(conventionalLogLine(line))).toEqual({
      level: 40,
      content_sha256: 'ab',
      duplicate_of: { name: 'a01', match_kind: 'bytes' },
      skipped_rows: 2,
    });
  });
});
