import type { Zone } from '../layout/values/timeZones.js';
import { isoTime } from './logTimes.js';
import { uploadEvent, type LineVerdict, type LogPlace } from './transferEvents.js';

/**
 * A plain CSV of uploads for a server whose own log this tool does not read (export it from
 * the server's audit trail): one completed upload per line, `time,path,size`, with an optional
 * header line `time,path,size`. The time is ISO 8601 (`2026-12-01T02:00:01Z`; without an offset,
 * in the transfer log's zone) or seconds since the epoch; a path with a comma or a quote is
 * quoted as CSV quotes (`"…"`, a quote doubled).
 */
const HEADER = /^\s*"?time"?\s*,\s*"?path"?\s*,\s*"?size"?\s*$/i;

/** One line's fields, split as CSV quotes them; null when the quoting is broken. */
export function csvFields(line: string): string[] | null {
  const fields: string[] = [];
  let position = 0;
  for (;;) {
    if (line[position] === '"') {
      let value = '';
      position++;
      for (;;) {
        const closingQuote = line.indexOf('"', position);
        if (closingQuote < 0) return null;
        value += line.slice(position, closingQuote);
        if (line[closingQuote + 1] === '"') {
          value += '"';
          position = closingQuote + 2;
          continue;
        }
        position = closingQuote + 1;
        break;
      }
      fields.push(value);
      if (position === line.length) return fields;
      if (line[position] !== ',') return null;
      position++;
      continue;
    }
    const comma = line.indexOf(',', position);
    if (comma < 0) {
      fields.push(line.slice(position));
      return fields;
    }
    fields.push(line.slice(position, comma));
    position = comma + 1;
  }
}

export function isCsvHeader(line: string): boolean {
  return HEADER.test(line);
}

function csvTime(text: string, zone: Zone): number {
  const t = text.trim();
  if (/^\d{9,11}(\.\d+)?$/.test(t)) return Math.round(Number(t) * 1000);
  return isoTime(t, zone);
}

export function readCsvLine(line: string, place: LogPlace, family: string, zone: Zone): LineVerdict {
  // a line that begins with a digit (every line of uploads but the header) is no header
  const first = line.charCodeAt(0);
  if (!(first >= 0x30 && first <= 0x39) && isCsvHeader(line)) return { kind: 'other' };
  const fields = csvFields(line.charCodeAt(line.length - 1) === 0x0d ? line.slice(0, -1) : line);
  if (!fields || fields.length !== 3) return { kind: 'unreadable', hides: 'a line of a CSV of uploads that does not read' };
  const [time, path, size] = fields as [string, string, string];
  const at = csvTime(time, zone);
  if (Number.isNaN(at) || path === '' || !/^\s*\d+\s*$/.test(size))
    return { kind: 'unreadable', hides: 'a line of a CSV of uploads that does not read' };
  const common = { server: family, at, atOtherwise: null, user: null, place, session: null };
  const upload = {
    path,
    startedAt: at,
    size: Number(size),
    sizeExact: true,
    complete: true,
    from: null,
    renamesLogged: false,
    whiteSpaceAs: null,
  };
  return { kind: 'events', events: [uploadEvent(common, upload)], at };
}
