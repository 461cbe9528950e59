import { UsageError } from '../../errors.js';
import type { Layout } from './layout.js';
import { readLayoutObject, toLayoutJson, type Fail } from './layoutObject.js';
import { PRESETS } from './presets.js';

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * A layout from configuration: a preset's name, an object, or an object that `extends` a preset
 * and says only what differs (docs/DESIGN.md "Layouts"). Every mistake is a usage error naming the
 * key, reported before any work.
 */
export function parseLayout(raw: unknown, where: string): Layout {
  const fail: Fail = (what) => {
    throw new UsageError(`${where}: layout ${what}`);
  };
  const preset = (name: unknown): Layout => {
    const found = typeof name === 'string' ? PRESETS.get(name) : undefined;
    if (!found) fail(`${JSON.stringify(name)} is not a preset (presets: ${[...PRESETS.keys()].join(', ')})`);
    return found;
  };
  if (typeof raw === 'string') return preset(raw);
  if (!isObject(raw)) return fail('must be a preset name or an object with "columns" and "naturalKey"');
  if (raw.extends === undefined) return readLayoutObject(raw, fail, 'custom');
  const base = preset(raw.extends);
  return readLayoutObject(extended(toLayoutJson(base), raw, fail), fail, `${base.name} (extended)`);
}

/**
 * A preset changed only where the layout says: its keys replace the preset's (a key set to
 * `null` removes the preset's, so its default holds: `"trailer": null` for a fragment of a
 * report cut before its closing line), except `columns` given as an object (each named column changed, a new name added, `null` dropping
 * one; a key set to `null` drops it from the column), `recordTypes` (by type, the same way) and
 * `skipRows` (added to the preset's).
 */
function extended(base: Record<string, unknown>, raw: Record<string, unknown>, fail: Fail): Record<string, unknown> {
  const { extends: _, columns, recordTypes, skipRows, ...rest } = raw;
  const out: Record<string, unknown> = withoutNulls({ ...base, ...rest });
  if (Array.isArray(columns)) out.columns = columns;
  else if (columns !== undefined) {
    if (!isObject(columns))
      fail('"columns" of a layout that extends a preset must be a list (all of them) or an object of changes by name');
    const byName = new Map((base.columns as Record<string, unknown>[]).map((c) => [c.name as string, c]));
    for (const [name, change] of Object.entries(columns)) {
      if (change === null) {
        if (!byName.delete(name)) fail(`columns: "${name}" is not a column of the preset, so it cannot be dropped`);
        continue;
      }
      if (!isObject(change)) fail(`columns: "${name}" must be an object of the keys that change (or null to drop the column)`);
      byName.set(name, withoutNulls({ ...(byName.get(name) ?? {}), ...change, name }));
    }
    out.columns = [...byName.values()];
  }
  if (recordTypes !== undefined) {
    if (!isObject(recordTypes)) fail('"recordTypes" must be an object');
    out.recordTypes = withoutNulls({ ...((base.recordTypes as Record<string, unknown> | undefined) ?? {}), ...recordTypes });
  }
  if (skipRows !== undefined) {
    if (!Array.isArray(skipRows)) fail('"skipRows" must be a list of {"column", "values"}');
    out.skipRows = [...((base.skipRows as unknown[] | undefined) ?? []), ...(skipRows as unknown[])];
  }
  return out;
}

function withoutNulls(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null));
}
