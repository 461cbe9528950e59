import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import type { IntakeServer } from '../intake/intakeKind.js';
import { locationPath } from '../intake/openIntake.js';
import type { LedgerQueries } from '../ledger/ledger.js';
import { isCalendarDate } from '../layout/reader/columnValues.js';
import { contentOf, type LedgerEvent } from '../ledger/types.js';

/** The period of a pack: whole UTC days, `to` included. */
export interface EvidencePeriod {
  from: string;
  to: string;
}

/** One line of loads.csv: a load (or a stale claim recovered as loaded) or a reprocessing, as the period's events record it. */
export interface EvidenceLoad {
  at: string;
  action: 'loaded' | 'recovered' | 'reprocessed';
  partner: string;
  name: string;
  sha256: string;
  contentSha256: string;
  rows: number | null;
  run: string | null;
  /** where the delivered bytes were archived, as the ledger knew it at the period's end; null when not yet */
  archived: string | null;
  /** a reprocessing's reason and operator */
  reason: string | null;
  operator: string | null;
}

/**
 * A partner's archive folder, where `sha256sum -c` of its SHA256SUMS file runs: a local folder,
 * or a folder on the server of the partner's intake (`server`, as the intake's kind describes it).
 */
export interface EvidenceArchive {
  partner: string;
  folder: string;
  server: IntakeServer | null;
}

export interface EvidencePack {
  /** file name to its bytes: the period's files in the order the manifest lists them, then MANIFEST, then the audit */
  files: Map<string, string>;
  loads: EvidenceLoad[];
  events: number;
  /** the SHA-256 of MANIFEST, which names every file of the period's record with its SHA-256: the pack's one hash to note down */
  manifestSha256: string;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * A cell a spreadsheet would run as a formula (OWASP's list: = + - @, tab, CR). A file name is
 * the partner's to choose (`=cmd|' -C calc'!A0.csv`), so any cell may begin so.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One CSV field: quoted when it holds a comma, a quote, or a line break (RFC 4180); one that a
 * spreadsheet would run is quoted with a single quote before it, which makes it text there.
 */
function field(value: unknown): string {
  const text = value === null || value === undefined ? '' : String(value);
  if (FORMULA_START.test(text)) return `"'${text.replace(/"/g, '""')}"`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * A file name exactly, for a tool: the display cell may carry the quote above (and a name may
 * begin with a quote of its own), so the name is also given as a JSON string, which begins
 * with `"` (never run) and holds line breaks as `\n`.
 */
const exactName = (name: string | null) => (name === null ? null : JSON.stringify(name));

const csv = (rows: unknown[][]) => rows.map((r) => r.map(field).join(',')).join('\n') + '\n';

/** JSON with its keys in order at every depth: the same object always gives the same text. */
function sortedJson(value: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
          )
        : v;
  return JSON.stringify(sort(value));
}

/** `2026-12-01`: a real day of the years 0001 to 9999, as the ledger's times can hold it (no year 0, no 2026-02-30). */
export function isDay(value: string): boolean {
  const parts = /^(\d{4})-(\d\d)-(\d\d)$/.exec(value);
  return parts !== null && isCalendarDate(Number(parts[1]), Number(parts[2]), Number(parts[3]));
}

/**
 * The period as ISO times: from the first millisecond of `from` (UTC) up to, not including, the
 * day after `to`; `until` is null after 9999-12-31, the last day an ISO time of four digits
 * holds (a later one would be written `+010000-…` and compare below every time of the ledger).
 */
export function periodBounds(period: EvidencePeriod): { since: string; until: string | null } {
  const [year, month, day] = period.to.split('-').map(Number) as [number, number, number];
  const next = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC takes years 0-99 for 1900-1999
  next.setUTCFullYear(year, month - 1, day + 1);
  return { since: `${period.from}T00:00:00.000Z`, until: next.getUTCFullYear() > 9999 ? null : next.toISOString() };
}

const LOADS = new Set(['loaded', 'recovered']);

/**
 * An auditor's pack for a period, from the ledger's events up to the period's end and nothing
 * later (the ledger only appends, so a later run changes no pack of a day already past): every
 * event of the period, every load and reprocessing among them with the place its bytes were
 * archived, their hashes. Rows are ordered by the ledger's own ids, JSON keys sorted, and no
 * time of making is written, so the same period gives the same bytes. The audit handed in is
 * of the moment the pack is made: it is written beside the period's files, outside the
 * manifest (README.txt says why).
 */
export async function evidencePack(
  ledger: LedgerQueries,
  period: EvidencePeriod,
  partners: string[] | undefined,
  audit: { json: string; text: string },
  archives: EvidenceArchive[] = [],
): Promise<EvidencePack> {
  const { since, until } = periodBounds(period);
  const known = (ledgerEvent: LedgerEvent) => until === null || ledgerEvent.at < until;
  const events = await ledger.eventsBetween(since, until, partners);
  const fileKey = (e: LedgerEvent) => `${e.name}\0${e.sha256}`;
  const ofFile = new Map<string, LedgerEvent[]>();
  for (const ledgerEvent of events) {
    if (!ledgerEvent.sha256) continue;
    const list = ofFile.get(fileKey(ledgerEvent));
    if (list) list.push(ledgerEvent);
    else ofFile.set(fileKey(ledgerEvent), [ledgerEvent]);
  }
  const loads: EvidenceLoad[] = [];
  for (const ledgerEvent of events) {
    if (!(LOADS.has(ledgerEvent.event) || ledgerEvent.event === 'reprocessed') || !ledgerEvent.sha256) continue;
    const row = await ledger.file(ledgerEvent.name, ledgerEvent.sha256);
    // its own events as they stood at the period's end (a later move or reprocessing is a later
    // period's): a load's move follows it within the period; a reprocessed file may have been
    // archived long before it
    const own =
      ledgerEvent.event === 'reprocessed'
        ? (await ledger.eventsFor(ledgerEvent.sha256)).filter(
            (h) => known(h) && h.name === ledgerEvent.name && h.sha256 === ledgerEvent.sha256,
          )
        : ofFile.get(fileKey(ledgerEvent))!;
    loads.push({
      at: ledgerEvent.at,
      action: ledgerEvent.event as EvidenceLoad['action'],
      partner: ledgerEvent.partner,
      name: ledgerEvent.name,
      sha256: ledgerEvent.sha256,
      contentSha256: row ? contentOf(row) : ledgerEvent.sha256,
      rows: typeof ledgerEvent.details.rows === 'number' ? ledgerEvent.details.rows : null,
      run: ledgerEvent.runId,
      archived: archivedAt(ledgerEvent, own),
      reason: ledgerEvent.event === 'reprocessed' ? String(ledgerEvent.details.reason ?? '') : null,
      operator: ledgerEvent.event === 'reprocessed' ? String(ledgerEvent.details.operator ?? '') : null,
    });
  }

  const files = new Map<string, string>();
  files.set(
    'loads.csv',
    csv([
      [
        'at',
        'action',
        'partner',
        'file',
        'delivered_sha256',
        'content_sha256',
        'rows',
        'run',
        'archived_as',
        'reason',
        'operator',
        'file_json',
      ],
      ...loads.map((evidenceLoad) => [
        evidenceLoad.at,
        evidenceLoad.action,
        evidenceLoad.partner,
        evidenceLoad.name,
        evidenceLoad.sha256,
        evidenceLoad.contentSha256,
        evidenceLoad.rows,
        evidenceLoad.run,
        evidenceLoad.archived,
        evidenceLoad.reason,
        evidenceLoad.operator,
        exactName(evidenceLoad.name),
      ]),
    ]),
  );
  files.set(
    'events.csv',
    csv([
      ['event_id', 'at', 'partner', 'run', 'event', 'file', 'sha256', 'details', 'file_json'],
      ...events.map((e) => [e.id, e.at, e.partner, e.runId, e.event, e.name, e.sha256, sortedJson(e.details), exactName(e.name)]),
    ]),
  );
  // one SHA256SUMS per partner, its names relative to that partner's archive folder: `sha256sum -c` there passes
  const chosen = new Set([...(partners ?? archives.map((evidenceArchive) => evidenceArchive.partner)), ...loads.map((l) => l.partner)]);
  const packArchives = [...chosen]
    .sort()
    .map((partner) => archives.find((a) => a.partner === partner) ?? { partner, folder: null, server: null });
  for (const archive of packArchives) {
    const sums = loads
      .filter((l) => l.partner === archive.partner && l.archived !== null && LOADS.has(l.action))
      .map((l) => checksumLine(l.sha256, nameInArchive(l.archived!, archive.folder)))
      .sort();
    files.set(sumsFileName(archive.partner), sums.length > 0 ? `${[...new Set(sums)].join('\n')}\n` : '');
  }
  const loadCount = loads.filter((l) => LOADS.has(l.action)).length;
  files.set('README.txt', readme(period, partners, loadCount, loads.length - loadCount, events.length, packArchives));
  const manifest = [...files].map(([name, text]) => `${sha256(text)}  ${name}`).join('\n') + '\n';
  files.set('MANIFEST', manifest);
  files.set('audit.json', `${audit.json}\n`);
  files.set('audit.txt', audit.text);
  return { files, loads, events: events.length, manifestSha256: sha256(manifest) };
}

/**
 * Where a load's bytes went (its first move after it) or, for a reprocessing, where they were
 * (the last move before it); an adopted load was recorded where it already lay.
 */
function archivedAt(e: LedgerEvent, own: LedgerEvent[]): string | null {
  const location = (h: LedgerEvent | undefined) => (h && typeof h.details.to === 'string' ? h.details.to : null);
  if (e.event === 'reprocessed') {
    const before = own.filter((h) => h.id < e.id);
    const adopted = before.find((h) => h.event === 'loaded' && typeof h.details.from === 'string');
    return location(before.filter((h) => h.event === 'moved').at(-1)) ?? (adopted ? String(adopted.details.from) : null);
  }
  if (typeof e.details.from === 'string') return e.details.from;
  return location(own.find((h) => h.event === 'moved' && h.id > e.id));
}

/** A partner's checksum file in the pack. */
export const sumsFileName = (partner: string) => `SHA256SUMS.${partner}`;

/**
 * A file's name as `sha256sum -c` finds it from its partner's archive folder: relative to that
 * folder (`../archive-2025/x.csv` for a file archived where an earlier setting put it); the
 * location as recorded when no folder is known (a partner no longer configured).
 */
function nameInArchive(location: string, folder: string | null): string {
  const path = locationPath(location);
  return folder === null ? path : posix.relative(folder, path) || posix.basename(path);
}

/**
 * One line of SHA256SUMS as GNU sha256sum writes it, so that `sha256sum -c` reads it back: a
 * name holding a backslash, a line feed or a carriage return is written with `\\`, `\n`, `\r`
 * and the line begins with a backslash.
 */
export function checksumLine(hash: string, name: string): string {
  if (!/[\\\n\r]/.test(name)) return `${hash}  ${name}`;
  const escaped = name.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
  return `\\${hash}  ${escaped}`;
}

/** A word for a shell command line: as it is when it holds nothing a shell would read otherwise, else in single quotes. */
const shellWord = (word: string) => (/^[\w/.,:@%+=-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`);

/** How to check one partner's archive against its SHA256SUMS file, for README.txt: its lines. */
function verifyStep(archive: { partner: string; folder: string | null; server: EvidenceArchive['server'] }): string[] {
  const sums = `/path/to/this/pack/${sumsFileName(archive.partner)}`;
  if (archive.folder === null)
    return [
      `${archive.partner}: not configured when the pack was made: its names are where the ledger recorded them`,
      `   sha256sum -c ${sums}`,
    ];
  if (archive.server === null) return [`${archive.partner}: cd ${shellWord(archive.folder)} && sha256sum -c ${sums}`];
  const local = `/tmp/${archive.partner}-archive`;
  return [
    `${archive.partner}: the archive is ${archive.folder} on ${archive.server.described}${archive.folder}`,
    `   download it (${local} must not exist yet), or mount it (sshfs), then the same command:`,
    `   ${archive.server.copyCommand(archive.folder, local, shellWord)}`,
    `   cd ${local} && sha256sum -c ${sums}`,
    `   (or on the server itself, in the folder behind ${archive.folder})`,
  ];
}

function readme(
  period: EvidencePeriod,
  partners: string[] | undefined,
  loads: number,
  reprocessings: number,
  events: number,
  archives: { partner: string; folder: string | null; server: EvidenceArchive['server'] }[],
): string {
  const sumsFiles = archives.map((a) => sumsFileName(a.partner)).join(', ') || '(no partner)';
  const steps = archives.flatMap((a) => verifyStep(a).map((line) => `   ${line}`)).join('\n');
  return `settle-ingest evidence pack
===========================

Period: ${period.from} to ${period.to} (whole days, UTC; both included)
Partners: ${partners ? partners.join(', ') : 'all in the ledger'}
Loads: ${loads}; reprocessings: ${reprocessings}; ledger events of the period: ${events}

The files
---------
loads.csv    One line per load, stale claim recovered as loaded, and reprocessing in the period,
             in the order the ledger recorded them: the time and the action, the partner, the
             file name, the SHA-256 of the bytes as delivered and of the decoded content (equal
             for a plain file), the rows loaded, the run, the name it was archived as (empty when
             its move to the archive came after the period), a reprocessing's reason and
             operator, and the file name again as a JSON string (file_json: exactly, for tools).
events.csv   Every ledger event of the period, in the order the ledger recorded them: arrival,
             claim, load, skips of resends (naming the file they duplicate), moves, reprocessing,
             holds, rejections, failures, ignored names. "details" is the event's own record, as
             JSON; file_json the name exactly.
SHA256SUMS.<partner>
             One per partner (${sumsFiles}):
             the SHA-256 of each archived file of that partner's loads in the period, under
             its name relative to that partner's archive folder (a name with a backslash or a
             line break is escaped as sha256sum does). There is no plain SHA256SUMS: one list
             of several partners' files verifies in no folder, and a script that still asks for
             it fails loudly instead of checking nothing.
MANIFEST     The SHA-256 of each file above. Its own SHA-256 is the pack's hash.
audit.json   The audit of the ledger against the finance database, the archive and (when one was
audit.txt    configured) the SFTP server's own log of uploads, as it stood when the pack was made
             ("taken_at"): JSON, and the same for a person. Not in MANIFEST: see below.

Spreadsheets
------------
A cell that begins with = + - @, a tab or a carriage return is written with a single quote
before it, so that no spreadsheet runs it as a formula (file names are the partner's to choose).
file_json holds each name exactly, without that quote.

Re-verifying without settle-ingest
----------------------------------
1. In this folder:           sha256sum -c MANIFEST         (every line must say OK)
2. The pack's hash:          sha256sum MANIFEST            (it must be the hash noted when the pack was made)
3. In each partner's archive folder (each archived file still holds the bytes that were loaded;
   every line must say OK):
${steps}
4. In the finance database:  SELECT sha256, row_count FROM settle.file_loads;
                             (each content_sha256 of loads.csv is there with its rows)

The same period gives the same pack, byte for byte (cmp, or the same MANIFEST hash), however
much happens after it: its files are made from the ledger's events up to the period's end, and
the ledger only appends. The audit is the exception, by design: it checks the archive, the
finance database and the server's log as they are now, so a pack made again later must be free
to find what has gone wrong since (an archived file deleted); one that matched the first would
hide it. It says when it was taken, and stands outside the manifest.
`;
}
