import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import type { Ledger } from '../ledger/ledger.js';
import { contentOf, type LedgerEvent } from '../ledger/types.js';

/** The period of a pack: whole UTC days, `to` included. */
export interface EvidencePeriod {
  from: string;
  to: string;
}

export interface EvidenceLoad {
  partner: string;
  name: string;
  sha256: string;
  contentSha256: string;
  rows: number | null;
  run: string | null;
  at: string;
  archived: string | null;
  reprocessings: { at: string; run: string | null; reason: string; operator: string }[];
}

export interface EvidencePack {
  /** file name to its bytes, in the order the manifest lists them */
  files: Map<string, string>;
  loads: EvidenceLoad[];
  events: number;
  /** the SHA-256 of MANIFEST, which names every other file's SHA-256: the pack's one hash to note down */
  manifestSha256: string;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** One CSV field: quoted when it holds a comma, a quote, or a line break (RFC 4180). */
function field(value: unknown): string {
  const text = value === null || value === undefined ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

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

/** `2026-12-01` as the first millisecond of that UTC day; the period's end is the day after `to`. */
export function periodBounds(period: EvidencePeriod): { since: string; until: string } {
  const until = new Date(`${period.to}T00:00:00.000Z`);
  until.setUTCDate(until.getUTCDate() + 1);
  return { since: `${period.from}T00:00:00.000Z`, until: until.toISOString() };
}

/**
 * An auditor's pack for a period, built from the ledger alone (and the audit result handed in):
 * every load that ended in it, the ledger's events for those contents, the archived files'
 * hashes, the audit. The bytes depend on nothing but these: rows are ordered by the ledger's
 * own ids and names, JSON keys sorted, and no time of making is written.
 */
export async function evidencePack(
  ledger: Ledger,
  period: EvidencePeriod,
  partners: string[] | undefined,
  audit: { json: string; text: string },
): Promise<EvidencePack> {
  const { since, until } = periodBounds(period);
  const loadEvents = (await ledger.eventsSince(['loaded', 'recovered'], since, partners)).filter((e) => e.at < until && e.sha256);
  const loads: EvidenceLoad[] = [];
  const events = new Map<number, LedgerEvent>();
  for (const e of loadEvents) {
    const row = await ledger.file(e.name, e.sha256!);
    const history = await ledger.eventsFor(e.sha256!);
    for (const h of history) events.set(h.id, h);
    loads.push({
      partner: e.partner,
      name: e.name,
      sha256: e.sha256!,
      contentSha256: row ? contentOf(row) : e.sha256!,
      rows: row?.rowCount ?? (typeof e.details.rows === 'number' ? e.details.rows : null),
      run: e.runId,
      at: e.at,
      archived: row?.location ?? null,
      reprocessings: history
        .filter((h) => h.event === 'reprocessed' && h.name === e.name)
        .map((h) => ({ at: h.at, run: h.runId, reason: String(h.details.reason ?? ''), operator: String(h.details.operator ?? '') })),
    });
  }
  const ordered = [...events.values()].sort((a, b) => a.id - b.id);

  const files = new Map<string, string>();
  files.set(
    'loads.csv',
    csv([
      ['partner', 'file', 'delivered_sha256', 'content_sha256', 'rows', 'run', 'loaded_at', 'archived_as', 'reprocessings'],
      ...loads.map((l) => [
        l.partner,
        l.name,
        l.sha256,
        l.contentSha256,
        l.rows,
        l.run,
        l.at,
        l.archived,
        l.reprocessings.map((r) => `${r.at} run ${r.run} by ${r.operator}: ${r.reason}`).join(' | '),
      ]),
    ]),
  );
  files.set(
    'events.csv',
    csv([
      ['event_id', 'at', 'partner', 'run', 'event', 'file', 'sha256', 'details'],
      ...ordered.map((e) => [e.id, e.at, e.partner, e.runId, e.event, e.name, e.sha256, sortedJson(e.details)]),
    ]),
  );
  // the delivered bytes' hash under the name each has in its archive folder: `sha256sum -c SHA256SUMS` there
  const sums = loads
    .filter((l) => l.archived !== null)
    .map((l) => `${l.sha256}  ${posix.basename(l.archived!)}`)
    .sort();
  files.set('SHA256SUMS', sums.length > 0 ? `${[...new Set(sums)].join('\n')}\n` : '');
  files.set('audit.json', `${audit.json}\n`);
  files.set('audit.txt', audit.text);
  files.set('README.txt', readme(period, partners, loads.length, ordered.length));
  const manifest = [...files].map(([name, text]) => `${sha256(text)}  ${name}`).join('\n') + '\n';
  files.set('MANIFEST', manifest);
  return { files, loads, events: ordered.length, manifestSha256: sha256(manifest) };
}

function readme(period: EvidencePeriod, partners: string[] | undefined, loads: number, events: number): string {
  return `settle-ingest evidence pack
===========================

Period: ${period.from} to ${period.to} (whole days, UTC; both included)
Partners: ${partners ? partners.join(', ') : 'all in the ledger'}
Loads: ${loads}; ledger events for their contents: ${events}

The files
---------
loads.csv    One line per load that ended in the period: the partner, the file name, the SHA-256
             of the bytes as delivered and of the decoded content (equal for a plain file), the
             rows loaded, the run and the time of the load, the name it was archived as, and
             every reprocessing of it (time, run, operator, reason).
events.csv   Every ledger event of those contents, in the order the ledger recorded them: arrival,
             claim, load, skips of resends (naming the file they duplicate), moves, reprocessing.
             "details" is the event's own record, as JSON.
SHA256SUMS   The SHA-256 of each archived file of those loads, under its name in the archive.
audit.json   The audit of the ledger against the finance database, the archive and (when one was
audit.txt    configured) the SFTP server's own log of uploads, made with the pack (JSON, and the
             same for a person).
MANIFEST     The SHA-256 of each file above. Its own SHA-256 is the pack's hash.

Re-verifying without settle-ingest
----------------------------------
1. In this folder:           sha256sum -c MANIFEST         (every line must say OK)
2. The pack's hash:          sha256sum MANIFEST            (it must be the hash noted when the pack was made)
3. In the archive folder:    sha256sum -c /path/to/this/pack/SHA256SUMS
                             (each archived file still holds the bytes that were loaded)
4. In the finance database:  SELECT sha256, row_count FROM settle.file_loads;
                             (each content_sha256 of loads.csv is there with its rows)

The same ledger gives the same pack, byte for byte: a second pack of the same period compares
equal (cmp, or the same MANIFEST hash) as long as nothing happened in the period meanwhile.
`;
}
