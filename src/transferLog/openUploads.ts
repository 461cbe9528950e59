import { posix } from 'node:path';
import { errorMessage } from '../errors.js';
import { expandLogFiles, readTransferLogs } from './logFiles.js';
import { logZone, utcText } from './logTimes.js';
import { serverPath, type OpenWrite } from './transferEvents.js';

/** What a run's readiness gate needs to ask the SFTP server's own log about one partner's intake. */
export interface ServerLogOfIntake {
  /** the log files as configured (a wildcard in a file name takes the rotated ones) */
  files: string[];
  /** the zone of the log's times where a line does not give one; undefined: this host's */
  timeZone: string | undefined;
  /** the folder the log's paths start from (a chroot), in the intake's terms */
  root: string;
  /** the intake folder as the server's paths have it */
  folder: string;
}

/** An upload into the intake that the log shows opened for writing and not closed. */
export interface HeldOpen {
  name: string;
  since: number;
  /** why the file is not ready, as the run's summary and the ledger's event say it */
  reason: string;
}

export type UploadsHeldOpen =
  | { kind: 'read'; open: Map<string, HeldOpen> }
  /** the log could not be read: the run says so and judges the files by its other rules */
  | { kind: 'unread'; problem: string };

/**
 * The intake's files the server's log shows still open for writing: opened (OpenSSH's
 * `open "…" flags WRITE…`) in a session that has neither closed the file nor ended. Only
 * OpenSSH's log writes an upload's start; xferlog and the CSV write an upload once it ended,
 * so they never show one open. A path without a leading `/` (taken from the session's start
 * folder, which the log does not show) is taken in this intake: at worst a file of the same
 * name elsewhere keeps this one waiting until it is closed.
 */
export async function uploadsHeldOpen(log: ServerLogOfIntake): Promise<UploadsHeldOpen> {
  let stillOpen: OpenWrite[];
  try {
    const files = await expandLogFiles(log.files);
    stillOpen = (await readTransferLogs(files, logZone(log.timeZone).zone)).stillOpen;
  } catch (err) {
    return { kind: 'unread', problem: errorMessage(err) };
  }
  const open = new Map<string, HeldOpen>();
  for (const write of stillOpen) {
    const name = nameInIntake(log, write.path);
    if (name === null) continue;
    const earlier = open.get(name);
    if (earlier && earlier.since <= write.since) continue;
    const where = `${write.place.file} line ${write.place.line}`;
    const by = write.user ? ` by ${write.user}` : '';
    open.set(name, {
      name,
      since: write.since,
      reason: `the server's transfer log shows it still open since ${utcText(write.since)} (opened for writing${by}, not closed: ${where})`,
    });
  }
  return { kind: 'read', open };
}

function nameInIntake(log: ServerLogOfIntake, path: string): string | null {
  if (!path.startsWith('/')) return path.includes('/') ? null : path;
  const full = serverPath(log.root, path);
  return posix.dirname(full) === log.folder ? posix.basename(full) : null;
}
