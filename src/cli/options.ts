import { Option, type Command } from 'commander';
import { commandFlagsOf, optionSources, optionsOf, type CommandName } from '../config/optionTable.js';

/**
 * The settings a command takes, as commander options, all from the one option table, then
 * its own flags (COMMAND_FLAGS). No commander defaults or `.env()`: a value commander filled
 * in would look like a flag to the settings resolver and beat the environment and the config file.
 */
export function withSettingOptions(cmd: Command, command: CommandName): Command {
  for (const { spec } of optionsOf(command)) {
    if (spec.flag === null) continue;
    const per = spec.per?.[command];
    // a required flag comes from the command line only: its variable and default do not apply
    const sources = per?.required ? '' : optionSources(spec);
    const option = new Option(`${spec.flag}${spec.value ? ` ${spec.value}` : ''}`, `${per?.description ?? spec.description}${sources}`);
    if (spec.choices) option.choices(spec.choices);
    if (spec.repeatable) option.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
    if (per?.required) option.makeOptionMandatory();
    cmd.addOption(option);
  }
  return withCommandFlags(cmd);
}

/** A command's words as typed (`report runs`); the program itself is `settle-ingest`. */
export function commandWords(cmd: Command): string {
  const words: string[] = [];
  for (let at: Command | null = cmd; at?.parent; at = at.parent) words.unshift(at.name());
  return words.length ? words.join(' ') : 'settle-ingest';
}

/** The command's own flags from COMMAND_FLAGS, by the words it is typed with. */
export function withCommandFlags(cmd: Command): Command {
  for (const { flag, value, description } of commandFlagsOf(commandWords(cmd))) {
    cmd.addOption(new Option(value ? `${flag} ${value}` : flag, description));
  }
  return cmd;
}
