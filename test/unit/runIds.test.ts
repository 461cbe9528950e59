import { describe, expect, it } from 'vitest';
import { CommandRunIds, commandOfRun } from '../../src/ledger/runIds.js';

describe("a command's run ids", () => {
  it("name each partner's run by the command's id and the partner; the default partner's is the command's id itself", () => {
    const ids = new CommandRunIds();
    const alpha = ids.runId('alpha');
    const command = commandOfRun(alpha)!;
    expect(command).toMatch(/^r-\d{8}-\d{4}-[0-9a-f]{4}$/);
    expect(alpha).toBe(`${command}-alpha`);
    expect(ids.runId('bank-nl')).toBe(`${command}-bank-nl`);
    expect(ids.runId('default')).toBe(command);
    expect(commandOfRun(`${command}-bank-nl`)).toBe(command);
    expect(commandOfRun('dry-20260314-0200-7f3a')).toBeNull();
  });

  it("draw another command id when the ledger has the run's id already, for the partners still to run", () => {
    const ids = new CommandRunIds();
    const first = ids.runId('alpha');
    const again = ids.runId('alpha', true);
    expect(again).not.toBe(first);
    expect(ids.runId('beta')).toBe(`${commandOfRun(again)}-beta`);
  });

  it('are never drawn twice by one process in one minute: the cycles of a busy watch are told apart', () => {
    // 4,000 commands: with 65,536 tags, a repeat among random draws is all but certain (p > 0.99)
    const commands = Array.from({ length: 4000 }, () => commandOfRun(new CommandRunIds().runId('alpha')));
    const byMinute = new Map<string, string[]>();
    for (const command of commands) byMinute.set(command!.slice(0, 15), [...(byMinute.get(command!.slice(0, 15)) ?? []), command!]);
    for (const inMinute of byMinute.values()) expect(new Set(inMinute).size).toBe(inMinute.length);
  });
});
