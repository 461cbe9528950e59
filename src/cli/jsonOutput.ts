import { randomUUID } from 'node:crypto';
import { printableJson, printableJsonText } from '../report/printable.js';
import type { AccountedArrival } from '../report/arrivalAudit/accountArrivals.js';
import type { AnswerPiece } from '../report/arrivalAudit/accountedList.js';

/**
 * The one JSON convention of every command's `--json` (documented in docs/JSON.md): one
 * object, `"version": 1` first, snake_case keys all the way down. Scripts key on the
 * version, so a change to a document's meaning is a new version, never a silent one.
 */
export const JSON_VERSION = 1;

const snakeNames = new Map<string, string>();

/**
 * A camelCase name as scripts and the log file read it: snake_case. Each name is worked out once
 * (a document of a million objects asks the same twenty names twenty million times); the names
 * are the code's own keys and those of the ledger's details, a bounded set.
 */
export const snake = (key: string): string => {
  let name = snakeNames.get(key);
  if (name === undefined) {
    name = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    if (snakeNames.size < 10_000) snakeNames.set(key, name);
  }
  return name;
};

/**
 * Keys of any depth in snake_case: the ledger keeps event details in camelCase (they are
 * the code's own objects), and they reach scripts through this one door.
 */
export function snakeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [snake(k), snakeKeys(v)]));
}

/** One command's result as its JSON document, on one line. */
export function jsonDocument(doc: Record<string, unknown>): string {
  return printableJson({ version: JSON_VERSION, ...(snakeKeys(doc) as Record<string, unknown>) });
}

/**
 * One command's JSON document with one array too long to hold as a string (an audit's accounted
 * uploads, each already written as its JSON object): the document is made with a placeholder
 * where the array goes (`build` puts it there), and given back in pieces, the array's items
 * between its two halves (a piece of items may hold several, with a comma between them).
 * Parsed, it is the document `jsonDocument` would have made; cut short anywhere, it does not parse.
 */
export function* jsonDocumentPieces(
  build: (placeholder: string) => Record<string, unknown>,
  items: Iterable<AnswerPiece>,
): Generator<AnswerPiece> {
  // a string no data holds (a NUL and a random id): where it lands in the text, the array goes
  const placeholder = `\u0000${randomUUID()}\u0000`;
  const text = jsonDocument(build(placeholder));
  const marker = printableJson(placeholder);
  const at = text.indexOf(marker);
  if (at < 0) {
    yield text;
    return;
  }
  yield `${text.slice(0, at)}[`;
  let first = true;
  for (const item of items) {
    if (!first) yield ',';
    yield item;
    first = false;
  }
  yield `]${text.slice(at + marker.length)}`;
}

const str = JSON.stringify;

/** A string JSON.stringify writes as it is between quotes, and printableJsonText leaves alone: printable ASCII without `"` or `\`. */
const NOT_AS_IS = /["\\\u0000-\u001f\u007f-\uffff]/;
/** Whether every string of the upload being written was written as it is (then there is nothing for printableJsonText to do). */
let allAsIs = true;

/** JSON.stringify's text of a string: the same, written without it where it would add nothing but the quotes. */
const quotedString = (value: string): string => {
  if (!NOT_AS_IS.test(value)) return `"${value}"`;
  allAsIs = false;
  return str(value);
};
const quotedStringOrNull = (value: string | null): string => (value === null ? 'null' : quotedString(value));

/**
 * The pieces of one upload's JSON object whose strings are all written as they are (nearly every
 * upload), put in place anew for each, always as many, and joined into the one flat string the
 * answer's buffer takes. Joined by `+`, they were a tree of some sixty strings an upload, three
 * kilobytes of the young generation a year's million times over, each flattened again as it was
 * written out.
 */
const pieces: string[] = [];
let put = 0;
const piece = (text: string): void => {
  pieces[put++] = text;
};
const pieceString = (value: string): void => {
  pieces[put++] = '"';
  pieces[put++] = value;
  pieces[put++] = '"';
};
const pieceStringOrNull = (value: string | null): void => {
  if (value !== null) return pieceString(value);
  pieces[put++] = 'null';
  pieces[put++] = '';
  pieces[put++] = '';
};

const plain = (value: string | null): boolean => value === null || !NOT_AS_IS.test(value);

/**
 * Whether every string of the upload is written as it is: each looked at where it is (one string
 * of them all joined was two more strings an upload). Its outcome and what became of it are
 * names of this tool's own, never anything to escape.
 */
function allPlain(upload: AccountedArrival): boolean {
  const dup = upload.duplicateOf;
  return (
    plain(upload.partner) &&
    plain(upload.name) &&
    plain(upload.path) &&
    plain(upload.at) &&
    plain(upload.user) &&
    plain(upload.renamedFrom) &&
    plain(upload.log.file) &&
    plain(upload.run) &&
    plain(upload.recordedAt) &&
    plain(upload.sha256) &&
    (dup === null || (plain(dup.name) && plain(dup.run))) &&
    plain(upload.reason) &&
    plain(upload.message)
  );
}

/** accountedArrivalJson's object where every string is printable ASCII without `"` or `\`: each between quotes as it is. */
function plainArrivalJson(upload: AccountedArrival): string {
  put = 0;
  piece('{"partner":');
  pieceString(upload.partner);
  piece(',"name":');
  pieceString(upload.name);
  piece(',"path":');
  pieceString(upload.path);
  piece(',"at":');
  pieceString(upload.at);
  piece(',"size":');
  piece(str(upload.size));
  piece(',"user":');
  pieceStringOrNull(upload.user);
  piece(',"renamed_from":');
  pieceStringOrNull(upload.renamedFrom);
  piece(',"log":{"file":');
  pieceString(upload.log.file);
  piece(',"line":');
  piece(str(upload.log.line));
  piece('},"outcome":');
  pieceStringOrNull(upload.outcome);
  piece(',"run":');
  pieceStringOrNull(upload.run);
  piece(',"recorded_at":');
  pieceStringOrNull(upload.recordedAt);
  piece(',"sha256":');
  pieceStringOrNull(upload.sha256);
  piece(',"duplicate_of":');
  const dup = upload.duplicateOf;
  piece(dup === null ? 'null' : `{"name":"${dup.name}","run":${dup.run === null ? 'null' : `"${dup.run}"`}}`);
  piece(',"reason":');
  pieceStringOrNull(upload.reason);
  piece(',"no_record":');
  pieceStringOrNull(upload.noRecord);
  piece(',"after_waiting":');
  pieceStringOrNull(upload.afterWaiting);
  piece(upload.unmatched ? ',"unmatched":true,"message":' : ',"unmatched":false,"message":');
  pieceString(upload.message);
  piece('}');
  return pieces.join('');
}

/**
 * An audit's accounted upload as its JSON object (AccountedList's `json` form): as the whole
 * document would have written it, byte for byte (`printableJson(snakeKeys(arrival))`, which
 * test/unit/jsonConvention.test.ts and test/unit/accountedArrivalJson.test.ts hold it to). Written
 * by hand for its one fixed shape: a year's million uploads through the generic key conversion and
 * JSON.stringify were a quarter of a `--json` audit's CPU. Each string is JSON.stringify's own
 * where it has anything to escape, and only then is the whole made printable.
 */
export function accountedArrivalJson(upload: AccountedArrival): string {
  // nearly every upload: every string written as it is
  if (allPlain(upload)) return plainArrivalJson(upload);
  // a string with something to escape: each string as JSON.stringify writes it, then the whole made printable
  allAsIs = true;
  const dup =
    upload.duplicateOf === null
      ? 'null'
      : `{"name":${quotedString(upload.duplicateOf.name)},"run":${quotedStringOrNull(upload.duplicateOf.run)}}`;
  const json =
    `{"partner":${quotedString(upload.partner)},"name":${quotedString(upload.name)},"path":${quotedString(upload.path)},"at":${quotedString(upload.at)},"size":${str(upload.size)}` +
    `,"user":${quotedStringOrNull(upload.user)},"renamed_from":${quotedStringOrNull(upload.renamedFrom)},"log":{"file":${quotedString(upload.log.file)},"line":${str(upload.log.line)}}` +
    `,"outcome":${quotedStringOrNull(upload.outcome)},"run":${quotedStringOrNull(upload.run)},"recorded_at":${quotedStringOrNull(upload.recordedAt)},"sha256":${quotedStringOrNull(upload.sha256)}` +
    `,"duplicate_of":${dup},"reason":${quotedStringOrNull(upload.reason)},"no_record":${quotedStringOrNull(upload.noRecord)},"after_waiting":${quotedStringOrNull(upload.afterWaiting)}` +
    `,"unmatched":${upload.unmatched},"message":${quotedString(upload.message)}}`;
  return allAsIs ? json : printableJsonText(json);
}
