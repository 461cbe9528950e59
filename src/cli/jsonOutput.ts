import { printableJson } from '../report/printable.js';

/**
 * The one JSON convention of every command's `--json` (documented in docs/JSON.md): one
 * object, `"version": 1` first, snake_case keys all the way down. Scripts key on the
 * version, so a change to a document's meaning is a new version, never a silent one.
 */
export const JSON_VERSION = 1;

/** A camelCase name as scripts and the log file read it: snake_case. */
export const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

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
