import {
  COMMAND_FLAGS,
  CONFIG_OPTION,
  OPTION_TABLE,
  PARTNER_OPTION,
  SETTING_KEYS,
  commandFlagsOf,
  type CommandFlagKey,
  type CommandFlagSpec,
  type CommandName,
  type OptionSpec,
} from './optionTable.js';
import { shownDefault } from './optionSpec.js';

/** docs/OPTIONS.md holds the generated table between these two lines; a unit test keeps them equal. */
export const OPTIONS_BEGIN = '<!-- options:begin (generated from src/config/optionTable.ts) -->';
export const OPTIONS_END = '<!-- options:end -->';

const cell = (text: string) => text.replaceAll('|', '\\|');
const code = (text: string) => `\`${cell(text)}\``;

function flagCell(spec: OptionSpec): string {
  if (spec.flag === null) return '(no flag)';
  const value = spec.choices ? spec.choices.join('|') : (spec.value?.replace(/^<|>$/g, '').toUpperCase() ?? '');
  return code(value ? `${spec.flag} ${value}` : spec.flag);
}

/** `evidence` is a subcommand of `report` with settings of its own (audit's): named as it is typed. */
const commandWords = (command: CommandName) => (command === 'evidence' ? 'report evidence' : command);

const defaultCell = (shown: string | undefined) => (shown === undefined ? '—' : shown.includes(' ') ? cell(shown) : code(shown));

function row(key: string, spec: OptionSpec, inFile: boolean): string {
  const meaning = spec.details ? `${spec.description}; ${spec.details}` : spec.description;
  return `| ${[
    flagCell(spec),
    spec.env ? code(spec.env) : '—',
    inFile ? code(`"${key}"`) : '—',
    defaultCell(shownDefault(spec)),
    spec.commands.map(commandWords).join(', '),
    cell(meaning),
  ].join(' | ')} |`;
}

/** One command flag: a row per wording, so that each command's own words are there. */
function flagRows(key: CommandFlagKey): string[] {
  const spec: CommandFlagSpec = COMMAND_FLAGS[key];
  const flag = code(spec.value ? `${spec.flag} ${spec.value.replace(/^<|>$/g, '').toUpperCase()}` : spec.flag);
  const worded = new Map<string, string[]>();
  for (const command of spec.commands) {
    // as the command's help says it: its own words, its default after them
    const description = commandFlagsOf(command).find((own) => own.key === key)!.description;
    worded.set(description, [...(worded.get(description) ?? []), command]);
  }
  return [...worded].map(([description, commands]) => `| ${[flag, commands.join(', '), cell(description)].join(' | ')} |`);
}

/**
 * The option tables of docs/OPTIONS.md: every setting with its flag, variable, config-file
 * key, default and commands; then every command's own flags.
 */
export function optionsMarkdown(): string {
  return [
    OPTIONS_BEGIN,
    '| flag | environment | config file | default | commands | meaning |',
    '| --- | --- | --- | --- | --- | --- |',
    row('config', CONFIG_OPTION, false),
    row('partner', PARTNER_OPTION, false),
    ...SETTING_KEYS.map((key) => row(key, OPTION_TABLE[key], true)),
    '',
    "Each command's own flags: on the command line only, with no variable and no config-file key (`settle-ingest`: given before the command).",
    '',
    '| flag | commands | meaning |',
    '| --- | --- | --- |',
    ...(Object.keys(COMMAND_FLAGS) as CommandFlagKey[]).flatMap(flagRows),
    OPTIONS_END,
  ].join('\n');
}
