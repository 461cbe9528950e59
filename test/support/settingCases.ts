/**
 * Config files that settle-ingest and its JSON Schema (`settle-ingest config --json-schema`) must
 * answer alike, per kind of setting, in both directions: each is taken by both or refused by
 * both. `issue` marks the 24 that once split them (issue 44: nine the CLI read that the schema
 * refused, such as `maxWaitingRuns: 5.5` and `quick: "TRUE"`; fourteen the schema took that the
 * CLI refused, such as `stableFor: "30 s"`; an empty path read as "here"). A case is a config
 * object, or the config's text where JSON.stringify cannot write it (`1e3`).
 */
export interface AgreementCase {
  config: Record<string, unknown> | string;
  taken: boolean;
  issue?: true;
}

const expect = (extra: Record<string, unknown>) => ({ expect: { by: '04:00', timeZone: 'UTC', ...extra } });
const deep = (depth: number): string => `{"stableFor": ${'['.repeat(depth)}${']'.repeat(depth)}}`;

export const AGREEMENT_CASES: readonly AgreementCase[] = [
  // durations: seconds as a number, or text by the one grammar
  { config: { stableFor: '30 s' }, taken: true, issue: true },
  { config: expect({ warnAfter: '1 h' }), taken: true, issue: true },
  { config: { stableFor: '30S' }, taken: true },
  { config: { stableFor: ' 1h 30m ' }, taken: true },
  { config: { maxWait: '1.5h' }, taken: true },
  { config: { maxAge: '2d' }, taken: true },
  { config: { stableFor: 0 }, taken: true },
  { config: { stableFor: '90' }, taken: true },
  { config: { claimLease: 60 }, taken: true },
  { config: { claimLease: '1m' }, taken: true },
  { config: { stableFor: '30m1h' }, taken: false },
  { config: { stableFor: '1h1h' }, taken: false },
  { config: { stableFor: 'soon' }, taken: false },
  { config: { stableFor: '' }, taken: false },
  { config: { stableFor: '-1' }, taken: false },
  { config: { stableFor: -1 }, taken: false },
  { config: { stableFor: '1.h' }, taken: false },
  { config: { stableFor: '1 30m' }, taken: false },
  { config: { stableFor: true }, taken: false },
  { config: { stableFor: null }, taken: false },
  { config: { stableFor: [] }, taken: false },
  { config: { claimLease: 59 }, taken: false },
  { config: { dbTimeout: 0.5 }, taken: false },
  { config: '{"stableFor": 1e400}', taken: false },
  // counts: a whole number in its range, as JSON or as text
  { config: { maxWaitingRuns: 5.5 }, taken: false, issue: true },
  { config: { maxWaitingRuns: '1000000' }, taken: false, issue: true },
  { config: { maxInflateRatio: '1' }, taken: false, issue: true },
  { config: expect({ files: 1.5 }), taken: false, issue: true },
  { config: expect({ files: '0' }), taken: false, issue: true },
  { config: { maxWaitingRuns: 5 }, taken: true },
  { config: { maxWaitingRuns: '5' }, taken: true },
  { config: { maxWaitingRuns: ' 5 ' }, taken: true },
  { config: { maxWaitingRuns: '05' }, taken: true },
  { config: { maxWaitingRuns: 999_999 }, taken: true },
  { config: { maxWaitingRuns: '999999' }, taken: true },
  { config: '{"maxWaitingRuns": 1e3}', taken: true },
  { config: expect({ files: '2' }), taken: true },
  { config: { maxWaitingRuns: 1_000_000 }, taken: false },
  { config: { maxWaitingRuns: '5.5' }, taken: false },
  { config: { maxWaitingRuns: -1 }, taken: false },
  { config: { maxWaitingRuns: '-1' }, taken: false },
  { config: { maxWaitingRuns: '+5' }, taken: false },
  { config: { maxWaitingRuns: '0x10' }, taken: false },
  { config: { maxWaitingRuns: true }, taken: false },
  { config: { maxInflateRatio: 2 }, taken: true },
  // sizes
  { config: { maxRecordBytes: 2048.5 }, taken: false, issue: true },
  { config: { sftpMinRate: 1.5 }, taken: false, issue: true },
  { config: { maxRecordBytes: '10' }, taken: false, issue: true },
  { config: { maxRecordBytes: '1024' }, taken: true },
  { config: { maxRecordBytes: 67_108_864 }, taken: true },
  { config: { maxRecordBytes: 67_108_865 }, taken: false },
  { config: { sftpMinRate: 0 }, taken: true },
  { config: { maxDecodedBytes: '9007199254740991' }, taken: true },
  { config: { maxDecodedBytes: '9007199254740992' }, taken: false },
  // switches: true/false, or the environment's words in either case
  { config: { quick: 'TRUE' }, taken: true, issue: true },
  { config: { quick: ' yes ' }, taken: true, issue: true },
  { config: { quick: true }, taken: true },
  { config: { quick: 'No' }, taken: true },
  { config: { quick: '1' }, taken: true },
  { config: { quick: 1 }, taken: false },
  { config: { quick: 'on' }, taken: false },
  { config: { quick: '' }, taken: false },
  { config: { quick: null }, taken: false },
  // paths and URLs: never empty or blank ("here" is ".")
  { config: { intake: '' }, taken: false, issue: true },
  { config: { ledger: '' }, taken: false, issue: true },
  { config: { logFile: '' }, taken: false, issue: true },
  { config: { transferLog: '' }, taken: false, issue: true },
  { config: { intake: ' ' }, taken: false },
  { config: { staging: '' }, taken: false },
  { config: { archive: '' }, taken: false },
  { config: { duplicates: ' ' }, taken: false },
  { config: { metricsFile: '' }, taken: false },
  { config: { summaryFile: '\t' }, taken: false },
  { config: { pgpKey: '' }, taken: false },
  { config: { knownHosts: '' }, taken: false },
  { config: { databaseUrl: '' }, taken: false },
  { config: { databaseUrl: '  ' }, taken: false },
  { config: { intake: 42 }, taken: false },
  { config: { intake: '.' }, taken: true },
  { config: { intake: 'intake' }, taken: true },
  { config: { intake: 'SFTP://ingest@sftp.example/out' }, taken: true },
  { config: { ledger: 'postgres://ingest@db/ledger' }, taken: true },
  // text of a form of its own
  { config: { intake: 'ftp://partner.example/out' }, taken: false, issue: true },
  { config: { readyMarker: 'done' }, taken: false, issue: true },
  { config: { schema: 'Bad Name' }, taken: false, issue: true },
  { config: { transferLogRoot: 'srv/sftp' }, taken: false, issue: true },
  { config: { pattern: 'settle_{yyyyMMdd}_{yyyy-MM-dd}.csv' }, taken: false, issue: true },
  { config: { readyMarker: '.done' }, taken: true },
  { config: { schema: 'settle_2' }, taken: true },
  { config: { transferLogRoot: '/srv/sftp/adyen/' }, taken: true },
  { config: { transferLogRoot: '/srv/../etc' }, taken: false },
  { config: { pattern: 'settle_{yyyyMMdd}_*.csv' }, taken: true },
  { config: { pattern: '' }, taken: false },
  { config: { logLevel: 'debug' }, taken: true },
  { config: { logLevel: 'INFO' }, taken: false },
  { config: { mode: 'manual' }, taken: true },
  { config: { mode: 'sometimes' }, taken: false },
  // lists of names: an array, or one string with commas, every name non-blank
  { config: { ignore: 'a,,b' }, taken: false, issue: true },
  { config: { ignore: ' ' }, taken: false, issue: true },
  { config: { transferLog: 'xferlog, ' }, taken: false, issue: true },
  { config: { ignore: [] }, taken: true },
  { config: { ignore: ['*.md5', 'README*'] }, taken: true },
  { config: { ignore: '*.md5,README*' }, taken: true },
  { config: { ignore: [''] }, taken: false },
  { config: { ignore: [' '] }, taken: false },
  { config: { ignore: [1] }, taken: false },
  { config: { transferLog: 'xferlog' }, taken: true },
  { config: { transferLog: ['xferlog', 'xferlog.1.gz'] }, taken: true },
  { config: { transferLog: 'xferlog,xferlog.1.gz' }, taken: true },
  { config: { transferLog: [] }, taken: false },
  { config: { transferLog: [''] }, taken: false },
  // expect
  { config: expect({ by: '4:00' }), taken: true },
  { config: expect({ by: ' 04:00 ' }), taken: true },
  { config: expect({ by: '24:00' }), taken: false },
  { config: expect({ every: ['Mon', 'thursday'] }), taken: true },
  { config: expect({ every: 'Day' }), taken: false },
  { config: expect({ every: [] }), taken: false },
  { config: { expect: null }, taken: true },
  // the file itself
  { config: { $schema: './settle-ingest.schema.json' }, taken: true },
  { config: { $schema: 5 }, taken: false },
  { config: { partners: {} }, taken: false },
  { config: { partners: { Adyen: { intake: 'adyen' } } }, taken: false },
  { config: { partners: { adyen: { ledger: 'ledger.sqlite' } } }, taken: false },
  { config: { partners: { adyen: { intake: '' } } }, taken: false },
  { config: { partners: { adyen: { intake: 'adyen', stableFor: '30 s' } } }, taken: true },
  { config: deep(200_000), taken: false },
];

/**
 * What only settle-ingest can say, and the schema cannot (no JSON Schema keyword holds it): each
 * is taken by the schema and refused by settle-ingest with exit 2 naming `key`. A sum of a
 * duration's parts against a setting's least; a name a library must know (time zones, holiday
 * regions); a rule across two keys; a file name pattern's range order; what the URL parser finds
 * inside an sftp:// URL.
 */
export const SCHEMA_CANNOT_SAY: readonly { config: Record<string, unknown>; key: string; why: string }[] = [
  { config: { dbTimeout: '0.5' }, key: '"dbTimeout"', why: 'a duration as text under its least' },
  { config: { claimLease: '59s' }, key: '"claimLease"', why: 'a duration as text under its least' },
  { config: { sftpTimeout: '0' }, key: '"sftpTimeout"', why: 'a duration as text under its least' },
  { config: { transferLogTimeZone: 'Mars/Base' }, key: '"transferLogTimeZone"', why: 'a time zone no one knows' },
  { config: expect({ timeZone: 'Europe/Nowhere' }), key: '"expect"."timeZone"', why: 'a time zone no one knows' },
  { config: expect({ holidays: 'XX' }), key: '"expect"."holidays"', why: 'a holiday region no one knows' },
  { config: expect({ warnAfter: '2h', errorAfter: '1h' }), key: '"expect"."errorAfter"', why: 'two keys against each other' },
  { config: { pattern: 'settle_[z-a].csv' }, key: '"pattern"', why: "a pattern's range out of order" },
  { config: { intake: 'sftp://sftp.example/out' }, key: 'intake', why: 'an sftp:// URL without its user' },
];
