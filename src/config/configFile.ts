import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { nearest } from '../nearest.js';
import { DuplicateKeyError, parseJsonText, TooDeepError } from './jsonText.js';
import { OPTION_TABLE, SETTING_KEYS, type OptionScope, type OptionSpec } from './optionTable.js';

/** A partner's name: lower-case letters, digits and `-` (it names runs, metrics labels and unit instances). */
export const PARTNER_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** The config file, read and checked once: its top-level settings and each partner's own. */
export interface ConfigFile {
  path: string;
  /** paths in the file are relative to its folder */
  dir: string;
  top: Record<string, unknown>;
  /** `"partners"`, in the file's order; undefined when the file has none */
  partners: Map<string, Record<string, unknown>> | undefined;
}

/** An unknown key is refused with the nearest known one. */
export function refuseUnknownKeys(object: Record<string, unknown>, known: readonly string[], where: string): void {
  for (const key of Object.keys(object)) {
    if (!known.includes(key)) {
      const guess = nearest(key, known);
      const hint = guess ? `did you mean "${guess}"?` : `known: ${known.join(', ')}`;
      throw new UsageError(`${where}: unknown setting "${key}" (${hint})`);
    }
  }
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The config file at `path`, read and checked: JSON errors by line and column, unknown keys by the nearest known one. */
export function readConfigFile(path: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`config file ${path} cannot be read: ${(err as Error).message}`, { cause: err });
  }
  let parsed: unknown;
  try {
    // a byte order mark (as some editors save UTF-8) is no part of the JSON, nor a column
    parsed = parseJsonText(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    if (err instanceof DuplicateKeyError || err instanceof TooDeepError)
      throw new UsageError(`config file ${path}: ${err.message}`, { cause: err });
    throw new UsageError(`config file ${path} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (!isObject(parsed)) throw new UsageError(`config file ${path} must hold one JSON object`);
  // `$schema` points an editor at `settle-ingest config --json-schema`'s output: no setting, so ignored
  refuseUnknownKeys(parsed, [...SETTING_KEYS, 'partners', '$schema'], `config file ${path}`);
  if (parsed.$schema !== undefined && typeof parsed.$schema !== 'string') {
    throw new UsageError(
      `config file ${path}: "$schema": expected a string (where an editor finds the schema), got ${JSON.stringify(parsed.$schema)}`,
    );
  }
  const config: ConfigFile = { path, dir: dirname(resolve(path)), top: parsed, partners: undefined };
  if (parsed.partners === undefined) return config;
  const where = `config file ${path}: "partners"`;
  if (!isObject(parsed.partners) || Object.keys(parsed.partners).length === 0) {
    throw new UsageError(`${where} must be an object with one entry per partner: {"adyen": {"intake": …}, "stripe": {…}}`);
  }
  config.partners = new Map();
  for (const [name, own] of Object.entries(parsed.partners)) {
    if (!PARTNER_NAME.test(name)) {
      throw new UsageError(`${where}: partner name "${name}" must be lower-case letters, digits and - (such as "adyen" or "bank-nl")`);
    }
    if (!isObject(own)) throw new UsageError(`${where}."${name}" must be an object of that partner's settings`);
    // a key shared by all partners is named first, then the first key no partner may set
    let unknown = false;
    for (const key of Object.keys(own)) {
      const scope = SCOPES.get(key);
      if (scope === 'shared') {
        throw new UsageError(`${where}."${name}": "${key}" is shared by all partners: set it at the top of the config file`);
      }
      if (scope === undefined) unknown = true;
    }
    if (unknown) refuseUnknownKeys(own, PARTNER_KEYS, `${where}."${name}"`);
    config.partners.set(name, own);
  }
  return config;
}

/** Each setting's scope (null: none said), by its key; a config of 20,000 partners asks it of each of their keys. */
const SCOPES = new Map<string, OptionScope | null>(SETTING_KEYS.map((key) => [key, (OPTION_TABLE[key] as OptionSpec).scope ?? null]));

/** The settings a partner's own entry may give. */
const PARTNER_KEYS = SETTING_KEYS.filter((key) => (OPTION_TABLE[key] as OptionSpec).scope !== 'shared');

/** A path in a config file is relative to the file's folder (`base`), not to wherever cron starts; a URL is itself. */
export function relativeTo(base: string | undefined, path: string): string {
  if (base === undefined || path.includes('://') || isAbsolute(path)) return path;
  return join(base, path);
}
