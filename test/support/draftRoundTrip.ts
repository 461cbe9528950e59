import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseLayout } from '../../src/layout/model/parseLayout.js';
import { findBadRows } from '../../src/layout/reader/readSettlement.js';
import { suggestLayout, type Suggestion } from '../../src/layout/suggest/suggestLayout.js';

/** A synthetic sample file of that name, in a folder of its own. */
export function sampleFile(bytes: string | Buffer, name: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-suggest-')), name);
  writeFileSync(path, bytes);
  return path;
}

/**
 * `layout suggest` on a file, its config saved as printed (through JSON) and parsed as a
 * user's, and the file read with it: the suggestion, the saved layout, and the rows read,
 * skipped, and the first problem.
 */
export async function draftRoundTrip(path: string, fileName: string) {
  const suggestion = await suggestLayout(path, fileName);
  const saved = JSON.parse(JSON.stringify(suggestion.config)) as { layout: Record<string, unknown> };
  const checked = await findBadRows(path, parseLayout(saved.layout, 'draft'), { fileName });
  return { s: suggestion, layout: saved.layout, checked };
}

/** Each drafted column as `name:type format`. */
export const draftTypes = (suggestion: Suggestion) =>
  suggestion.draft!.columns.map((c) => `${c.name}:${c.type}${c.format ? ` ${c.format}` : ''}`);
