import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { settleProgram } from '../../src/cli/index.js';
import { commandWords } from '../../src/cli/options.js';
import { COMMAND_FLAGS, commandFlagsOf, optionSources, optionsOf, type CommandName } from '../../src/config/optionTable.js';

/** Every command of the program, the program itself first, subcommands after their parent. */
function everyCommand(cmd: Command): Command[] {
  return [cmd, ...cmd.commands.flatMap(everyCommand)];
}

/** The settings a command's words take: `report runs` takes report's, `report evidence` its own. */
function settingsCommand(words: string): CommandName | undefined {
  if (words === 'report evidence') return 'evidence';
  if (words.startsWith('report ')) return 'report';
  return optionsOf(words as CommandName).length ? (words as CommandName) : undefined;
}

/** What the tables say a command's help holds: each flag with its help text (a group such as `report` takes no settings). */
function tableOptions(cmd: Command): Map<string, string> {
  const words = commandWords(cmd);
  const expected = new Map<string, string>();
  const command = cmd.parent && cmd.commands.length ? undefined : settingsCommand(words);
  for (const { spec } of command ? optionsOf(command) : []) {
    if (spec.flag === null) continue;
    const per = spec.per?.[command!];
    expected.set(spec.flag, `${per?.description ?? spec.description}${per?.required ? '' : optionSources(spec)}`);
  }
  for (const { flag, description } of commandFlagsOf(words)) expected.set(flag, description);
  return expected;
}

describe('every command flag', () => {
  const commands = everyCommand(settleProgram(() => {}));

  it('comes from the option table or COMMAND_FLAGS, with its help text, on every command', () => {
    const outside: string[] = [];
    for (const cmd of commands) {
      const words = commandWords(cmd);
      const expected = tableOptions(cmd);
      for (const option of cmd.options) {
        if (option.long === '--version') continue; // commander's own, from .version()
        if (expected.get(option.long ?? option.flags) !== option.description) outside.push(`${words} ${option.flags}`);
      }
      // and every flag the tables give this command is on it
      expect(
        cmd.options
          .map((option) => option.long)
          .filter((flag) => expected.has(flag!))
          .sort(),
        words,
      ).toEqual([...expected.keys()].sort());
    }
    expect(outside).toEqual([]);
  });

  it('names only commands the program has', () => {
    const known = new Set(commands.map(commandWords));
    for (const spec of Object.values(COMMAND_FLAGS)) for (const command of spec.commands) expect(known, spec.flag).toContain(command);
  });
});
