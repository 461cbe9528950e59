import { randomBytes } from 'node:crypto';
import { nowMs } from '../clock.js';
import { DEFAULT_PARTNER } from './types.js';

/** A dry run's id (`--dry-run`): it is never recorded in the ledger, and says so by its prefix. */
export const DRY_RUN_PREFIX = 'dry-';

/** `r-20260314-0200-7f3a`: a command's id, the UTC minute it started plus a random tag. */
const COMMAND_ID = /^r-\d{8}-\d{4}-[0-9a-f]{4}/;

/** `r-20260314-0200-7f3a`: the UTC minute the run started plus a random tag (`dry-…` for a dry run). */
export function newRunId(at = new Date(nowMs()), opts: { dryRun?: boolean } = {}): string {
  const iso = at.toISOString(); // 2026-03-14T02:00:00.000Z
  const day = iso.slice(0, 10).replaceAll('-', '');
  const minute = iso.slice(11, 16).replace(':', '');
  return `${opts.dryRun ? DRY_RUN_PREFIX : 'r-'}${day}-${minute}-${randomBytes(2).toString('hex')}`;
}

/**
 * The run ids of one command (a `run`, or one cycle of `watch`): each partner's run is the
 * command's id and the partner's name, `r-20260314-0200-7f3a-adyen` (the `default` partner of a
 * config without "partners", its only one, has the command's id itself), so that `report run`
 * finds every partner's run of the last command by its id. A command's id is drawn once, and
 * never twice in one process within its minute (a `watch` may end several cycles a minute), so
 * that one process's commands are told apart exactly; a run id taken in the ledger already (another
 * process drew the same tag in the same minute) draws a new one for the partners still to run.
 */
export class CommandRunIds {
  /** the command ids this process drew in `minute` (`r-20260314-0200`), the minute of its latest */
  private static drawn = new Set<string>();
  private static minute = '';
  private id: string | undefined;

  /** The run id of `partner`'s run in this command; `again`: the last one was taken in the ledger already. */
  runId(partner: string, again = false): string {
    if (this.id === undefined || again) this.id = CommandRunIds.draw();
    return partner === DEFAULT_PARTNER ? this.id : `${this.id}-${partner}`;
  }

  private static draw(): string {
    for (;;) {
      const id = newRunId();
      const minute = id.slice(0, 15);
      if (minute !== CommandRunIds.minute) {
        CommandRunIds.drawn.clear();
        CommandRunIds.minute = minute;
      }
      if (CommandRunIds.drawn.has(id)) continue;
      CommandRunIds.drawn.add(id);
      return id;
    }
  }
}

/** The command a run id belongs to (`r-20260314-0200-7f3a` of `r-20260314-0200-7f3a-adyen`); null for an id of another shape. */
export function commandOfRun(runId: string): string | null {
  return COMMAND_ID.exec(runId)?.[0] ?? null;
}
