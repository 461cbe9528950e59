import { posix } from 'node:path';
import { classifyName, type NameVerdict } from '../../intake/classifyName.js';
import { isMoverPath } from '../../intake/moverName.js';
import { finalName, isInProgressName } from '../../intake/names.js';
import type { TransferEvent, Upload } from './transferEvents.js';

/** One partner's intake as the transfer log names it, and what its runs take from it. */
export interface IntakeView {
  partner: string;
  /** the intake folder as the server's paths have it */
  folder: string;
  /** the folder the log's paths start from (a chroot), `/` when they are the server's own */
  root: string;
  pattern: RegExp;
  ignore: RegExp[];
  readyMarker: string | undefined;
}

/**
 * One upload's stay under one name in an intake: from the end of its write (or the rename that
 * brought it there) until a rename or removal took it away, if the log says one did.
 */
export interface Arrival {
  partner: string;
  name: string;
  /** its path as the log has it: where the upload was written, or where a rename took it */
  path: string;
  /** when it could first be seen under this name */
  at: number;
  upload: Upload;
  /** how it came under this name: written there, or renamed there from `renamedFrom` */
  renamedFrom: string | null;
  departed: { at: number; how: 'removed' | 'renamed'; to: string | null } | null;
  /** a later arrival under the same name before this one departed: it wrote over this one */
  overwrittenBy: Arrival | null;
  verdict: NameVerdict;
}

/** An upload that landed outside every intake: a folder no run reads. */
export interface StrayUpload {
  path: string;
  upload: Upload;
}

/** The full path of a log's path, in the intake's terms. */
function fullPath(root: string, path: string): string {
  return posix.normalize(posix.join(root, path.startsWith('/') ? path : `/${path}`));
}

function intakeOf(intakes: IntakeView[], path: string): { intake: IntakeView; name: string } | null {
  for (const intake of intakes) {
    const full = fullPath(intake.root, path);
    if (posix.dirname(full) === intake.folder) return { intake, name: posix.basename(full) };
  }
  return null;
}

/**
 * Follows each upload from the log through the renames that carried it into, within and out
 * of the intakes: every stay under a name in an intake is an arrival to account for. Uploads
 * written elsewhere, and never renamed into an intake, are strays.
 */
export function arrivalsOf(events: TransferEvent[], intakes: IntakeView[]): { arrivals: Arrival[]; strays: StrayUpload[] } {
  const arrivals: Arrival[] = [];
  const strays: StrayUpload[] = [];
  /** what is at each path now, by server and path: the upload and, in an intake, its arrival */
  const present = new Map<string, { upload: Upload; arrival: Arrival | null }>();
  const key = (server: string, path: string) => `${server}\n${posix.normalize(path)}`;
  // the names each partner's intake holds now, kept as arrivals come and go (counted: two
  // servers' uploads may hold one name at once); rebuilt per arrival, they made the work quadratic
  const namesHeld = new Map<string, Map<string, number>>();
  const presentNames = (partner: string) => {
    let names = namesHeld.get(partner);
    if (!names) namesHeld.set(partner, (names = new Map()));
    const held = names;
    return {
      has: (name: string) => (held.get(name) ?? 0) > 0,
      add: (name: string) => held.set(name, (held.get(name) ?? 0) + 1),
      remove: (name: string) => (held.get(name) === 1 ? held.delete(name) : held.set(name, (held.get(name) ?? 1) - 1)),
    };
  };
  const arrive = (upload: Upload, path: string, at: number, renamedFrom: string | null): Arrival | null => {
    const where = intakeOf(intakes, path);
    if (!where) return null;
    // a log without renames never shows `X.part` becoming `X`: the upload is taken as X's
    if (!upload.renamesLogged && isInProgressName(where.name)) {
      renamedFrom = where.name;
      where.name = finalName(where.name);
    }
    const arrival: Arrival = {
      partner: where.intake.partner,
      name: where.name,
      path,
      at,
      upload,
      renamedFrom,
      departed: null,
      overwrittenBy: null,
      verdict: classifyName(where.name, where.intake, presentNames(where.intake.partner)),
    };
    arrivals.push(arrival);
    presentNames(arrival.partner).add(arrival.name);
    return arrival;
  };
  const depart = (arrival: Arrival, departed: NonNullable<Arrival['departed']>) => {
    arrival.departed = departed;
    presentNames(arrival.partner).remove(arrival.name);
  };
  const leave = (server: string, path: string, at: number, how: 'removed' | 'renamed', to: string | null) => {
    const here = present.get(key(server, path));
    present.delete(key(server, path));
    if (here?.arrival && !here.arrival.departed) depart(here.arrival, { at, how, to });
    return here;
  };

  for (const event of events) {
    if (event.kind === 'upload') {
      const before = present.get(key(event.server, event.path));
      const arrival = arrive(event, event.path, event.at, null);
      if (before?.arrival && !before.arrival.departed) {
        before.arrival.overwrittenBy = arrival;
        depart(before.arrival, { at: event.startedAt, how: 'removed', to: null });
      }
      present.set(key(event.server, event.path), { upload: event, arrival });
      // the tool's own temporaries (a probe of the server's RENAME, a copy on its way into a final folder) are no one's upload
      if (!arrival && event.complete && !isMoverPath(event.path)) strays.push({ path: event.path, upload: event });
    } else if (event.kind === 'rename') {
      const moved = leave(event.server, event.from, event.at, 'renamed', event.to);
      if (!moved) continue; // a file the log did not see arrive (before its first line): nothing to follow
      const arrival = arrive(moved.upload, event.to, event.at, posix.basename(event.from));
      present.set(key(event.server, event.to), { upload: moved.upload, arrival });
    } else {
      leave(event.server, event.path, event.at, 'removed', null);
    }
  }
  return { arrivals, strays };
}
