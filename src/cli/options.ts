import { Option, type Command } from 'commander';
import { optionSources, optionsOf, type CommandName } from '../config/optionTable.js';

/**
 * The settings a command takes, as commander options, all from the one option table. No
 * commander defaults or `.env()`: a value commander filled in would look like a flag to the
 * settings resolver and beat the environment and the config file.
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
  return cmd;
}
