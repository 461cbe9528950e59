import { posix } from 'node:path';
import { classifyName, type NameVerdict } from '../../intake/classifyName.js';
import { isMoverPath } from '../../intake/moverName.js';
import { finalName, isInProgressName } from '../../intake/names.js';
import {
  isNormalPath,
  ownCopy,
  serverPath,
  type Link,
  type Removal,
  type Rename,
  type TransferEvent,
  type Upload,
} from '../../transferLog/transferEvents.js';

/** One partner's intake as the transfer log names it, and what its runs take from it. */
export interface IntakeView {
  partner: string;
  /** the intake folder as the server's paths have it */
  folder: string;
  /** the folder the log's paths start from (a chroot), `/` when they are the server's own */
  root: string;
  /**
   * the login the partner uploads as (`--transfer-log-user`; else an SFTP intake's own, its
   * `sftp://USER@…` URL), null when neither says: a session of that login is that partner's, so
   * two chrooted partners sharing one syslog file, both writing `/in/x.csv`, are told apart, and a
   * path its session sent without a leading `/` is taken in this partner's intake
   */
  user: string | null;
  pattern: RegExp;
  ignore: RegExp[];
  readyMarker: string | undefined;
  /**
   * what goes before a server path in the ledger's record of a move there (`sftp://host:port`
   * for an SFTP intake, nothing for a local folder): a rename in the log is matched to the
   * ledger's own moves by where it went; absent, as for a local folder
   */
  locationPrefix?: string;
}

/**
 * What the audit keeps of an upload once its line is read, shared by each of its stays in an
 * intake: its size and how it ended, who wrote it and where the log says so. The log's event of it
 * (its path, server, session, client, times) goes as soon as the upload is followed: a year's
 * million uploads held whole are a third of a gigabyte.
 */
export interface ArrivedUpload {
  size: number;
  sizeExact: boolean;
  complete: boolean;
  user: string | null;
  /** the log file and line that wrote it (the reader's place object is let go with the line) */
  logFile: string;
  logLine: number;
  renamesLogged: boolean;
  whiteSpaceAs: string | null;
}

/**
 * One upload's stay under one name in an intake: from the end of its write (or the rename or
 * link that brought it there) until a rename or removal took it away, if the log says one did.
 */
export interface Arrival {
  partner: string;
  name: string;
  /** its path as the log has it: where the upload was written, or where a rename or link took it */
  path: string;
  /** when it could first be seen under this name */
  at: number;
  /** the other instant `at` may be (a local time in the hour a fall-back repeats): it is matched under either */
  atOtherwise: number | null;
  upload: ArrivedUpload;
  /** how it came under this name: written there, renamed there from `renamedFrom`, or hard-linked there from it */
  renamedFrom: string | null;
  cameBy: 'upload' | 'rename' | 'link';
  /** the path was relative: taken in the intake of the session's partner (the start folder an INFO log does not show) */
  relativePath: boolean;
  /** false when a rename or link brought it from a name the log never saw written: its size is not known */
  sizeKnown: boolean;
  /**
   * `leftIntake`: a rename took it out of the intake (to a folder no run of this partner
   * reads, or another partner's): it is listed as leaving, never as accounted
   */
  departed: {
    at: number;
    how: 'removed' | 'renamed';
    to: string | null;
    leftIntake: boolean;
    /** where a rename took it, as the ledger records a move there (see `IntakeView.locationPrefix`) */
    location?: string;
  } | null;
  /** a later arrival under the same name before this one departed (an upload, a posix-rename, a link over it): it replaced this one */
  overwrittenBy: Arrival | null;
  verdict: NameVerdict;
}

/** An upload that landed outside every intake: a folder no run reads. */
export interface StrayUpload {
  path: string;
  upload: Upload;
}

/**
 * An upload (or a rename or link) into a place the log does not tie to one partner: a path that
 * is the intake of several partners (chroots read as local folders), or a path sent without a
 * leading `/`, by a session whose login is no partner's (and several partners read this log).
 * Crediting either partner could name the wrong one: it is a discrepancy of its own.
 */
export interface AmbiguousUpload {
  path: string;
  upload: ArrivedUpload;
  /** when it came there */
  at: number;
  /** the partners it may be of */
  partners: string[];
  relativePath: boolean;
}

/** Each login's view, worked out once per list of intakes (an event asks several times). */
const views = new WeakMap<IntakeView[], Map<string | null, SessionView>>();

interface SessionView {
  /** the intakes its paths can be in */
  intakes: IntakeView[];
  namespace: string;
  /** the intakes of the partners whose login it is */
  own: IntakeView[];
  /** where its paths start, in the intakes' terms: its own partners' root (a chroot), else `/` */
  root: string;
}

function intakesFor(intakes: IntakeView[], user: string | null): SessionView {
  const known = views.get(intakes) ?? views.set(intakes, new Map()).get(intakes)!;
  let view = known.get(user);
  if (!view) known.set(user, (view = sessionView(intakes, user)));
  return view;
}

/**
 * The intakes a session's event can be in, and whose paths its paths are. A session of a
 * partner's login (`IntakeView.user`) sees what its partner's root holds: its paths start there (a
 * chroot read as a local folder, `--transfer-log-root`), and only the intakes under that root are
 * reachable; two partners read as two logins with one intake path (`sftp://alpha@…/in`,
 * `sftp://beta@…/in`) can only be two chroots, each in a namespace of its own. A session of no
 * partner's login sees every intake, in the server's one namespace (a partner uploading as a login
 * other than the one its intake is read as writes where that run reads).
 */
function sessionView(intakes: IntakeView[], user: string | null): SessionView {
  const own = user === null ? [] : intakes.filter((intake) => intake.user === user);
  if (own.length === 0) return { intakes, namespace: '', own, root: '/' };
  const chrooted = own.some((mine) =>
    intakes.some((other) => other.user !== mine.user && other.folder === mine.folder && other.root === mine.root),
  );
  if (chrooted) return { intakes: own, namespace: `user ${user}`, own, root: '/' };
  const roots = new Set(own.map((intake) => intake.root));
  return { intakes: intakes.filter((intake) => roots.has(intake.root)), namespace: '', own, root: roots.size === 1 ? own[0]!.root : '/' };
}

/** Where a path of the log is: one partner's intake, several (`ambiguous`), or none (null). */
type Place =
  | { intake: IntakeView; name: string; relative: boolean; ambiguous?: undefined }
  | { ambiguous: IntakeView[]; name: string; relative: boolean; intake?: undefined };

/**
 * The one rule for where a path of the log is. A path with a leading `/` starts at the root of
 * the session's view (above): the intake whose folder holds it, and where several partners'
 * intakes do (chroots), the session's own partner's, or else it is ambiguous. A path without one
 * (`x.csv` in a session `internal-sftp -d /in` started in its intake; the start folder is not in
 * an INFO log) is taken in the intake of the session's partner: the partner whose login the
 * session is, or the only partner this log is read for; else it is ambiguous. One with a `/` in
 * it (`sub/x.csv`) is below the start folder, in no intake.
 */
function intakeOf(
  intakes: IntakeView[],
  event: TransferEvent,
  path: string,
  view: SessionView = intakesFor(intakes, event.user),
): Place | null {
  if (!path.startsWith('/')) {
    if (path.includes('/')) return null;
    const mine = view.own.length > 0 ? view.own : intakes.length === 1 ? intakes : [];
    if (mine.length === 1) return { intake: mine[0]!, name: path, relative: true };
    return { ambiguous: mine.length > 1 ? mine : intakes, name: path, relative: true };
  }
  // a normal path's folder and name are either side of its last `/` (nearly every path: no
  // `normalize`, `dirname` or `basename` of it, which walk it a character at a time)
  const cut = isNormalPath(path) && !path.endsWith('/') ? path.lastIndexOf('/') : -1;
  const folder = cut < 0 ? null : cut === 0 ? '/' : path.slice(0, cut);
  let match: IntakeView | undefined;
  let matches: IntakeView[] | undefined;
  for (const intake of view.intakes) {
    const holder = folder !== null && intake.root === '/' ? folder : posix.dirname(serverPath(intake.root, path));
    if (holder !== intake.folder) continue;
    if (match === undefined) match = intake;
    else (matches ??= [match]).push(intake);
  }
  if (match === undefined) return null;
  // the name is the path's own, or a string of its own: a slice of a path cut from a line would
  // keep the line alive; the path is kept by its arrival anyway
  const name = cut < 0 ? ownCopy(posix.basename(posix.normalize(path))) : path.slice(cut + 1);
  if (matches === undefined) return { intake: match, name, relative: false };
  const own = matches.filter((intake) => view.own.includes(intake));
  if (own.length === 1) return { intake: own[0]!, name, relative: false };
  return { ambiguous: matches, name, relative: false };
}

/**
 * A path of the log as the server has it from its root: a relative one taken in the intake of
 * the session's partner (as `intakeOf` takes it), so that a later `/in/x.csv` is the same file.
 */
function absoluteIn(intakes: IntakeView[], event: TransferEvent, path: string): string {
  return path.startsWith('/') ? path : absoluteAt(path, intakeOf(intakes, event, path));
}

/** `absoluteIn`, where `intakeOf` already said where the path is. */
function absoluteAt(path: string, where: Place | null): string {
  if (path.startsWith('/')) return path;
  if (!where?.intake) return path;
  const { root, folder } = where.intake;
  const inLog = root === '/' ? folder : folder.startsWith(`${root}/`) ? folder.slice(root.length) : null;
  return inLog === null ? path : posix.join(inLog, path);
}

/** A path of the log, in the partner's intake's terms, as the ledger records a move there. */
function locationOf(intakes: IntakeView[], partner: string, path: string): string {
  const intake = intakes.find((i) => i.partner === partner)!;
  return `${intake.locationPrefix ?? ''}${serverPath(intake.root, path)}`;
}

/**
 * Whether the server refused a rename, link or removal: the session's next line said a status.
 * `No such file` may instead answer the next request (a `stat` the client sends before an
 * upload, not logged at INFO): it is taken as the request's own only when the log has nothing
 * at the old path either.
 */
function refused(event: Rename | Link | Removal, sourceKnown: boolean): boolean {
  if (event.status === null) return false;
  return event.status !== 'No such file' || !sourceKnown;
}

/**
 * An upload the log did not see (before its first line, or outside it) under a name a rename or
 * link brought into an intake: its size is not known.
 */
function unseenUpload(event: Rename | Link): ArrivedUpload {
  return {
    size: 0,
    sizeExact: false,
    complete: true,
    user: event.user,
    logFile: event.place.file,
    logLine: event.place.line,
    renamesLogged: true,
    whiteSpaceAs: null,
  };
}

/** What is kept of an upload the log shows written (see ArrivedUpload). */
function arrivedUpload(event: Upload): ArrivedUpload {
  return {
    size: event.size,
    sizeExact: event.sizeExact,
    complete: event.complete,
    user: event.user,
    logFile: event.place.file,
    logLine: event.place.line,
    renamesLogged: event.renamesLogged,
    whiteSpaceAs: event.whiteSpaceAs,
  };
}

/** The names present, for an intake without a ready marker: `classifyName` does not ask it. */
const NO_NAMES: ReadonlySet<string> = new Set();

/** The verdict a name the run takes has: one object for a million of them. */
const TAKE: NameVerdict = Object.freeze({ kind: 'take' });

/**
 * What is at a path now: the arrival there, where the path is an intake, else the upload (a
 * folder no run reads, or one of several partners'). One object either way, never a pair.
 */
type AtPath = Arrival | ArrivedUpload;
const arrivalAt = (here: AtPath | undefined): Arrival | null => (here !== undefined && 'cameBy' in here ? here : null);
const uploadAt = (here: AtPath): ArrivedUpload => ('cameBy' in here ? here.upload : here);

/** What the log's uploads became: the arrivals in the intakes, the strays, the uploads no one partner's. */
export interface ArrivalsFound {
  arrivals: Arrival[];
  strays: StrayUpload[];
  ambiguous: AmbiguousUpload[];
}

/**
 * Follows each upload from the log through the renames and links that carried it into, within
 * and out of the intakes: every stay under a name in an intake is an arrival to account for.
 * Uploads written elsewhere, and never renamed or linked into an intake, are strays. The events
 * are read once, in order: a caller that hands over a list it will not read again lets each
 * event go as it is followed.
 */
export function arrivalsOf(events: Iterable<TransferEvent>, intakes: IntakeView[]): ArrivalsFound {
  const follower = arrivalFollower(intakes);
  for (const event of events) follower.follow(event);
  return follower.found;
}

/**
 * `arrivalsOf`, an event at a time, in the log's order, as they are read: the audit hands each
 * event of a log read in time order to `follow` as its line is read (a year's million events are
 * never held: they die young); `found` grows as they come.
 */
export function arrivalFollower(intakes: IntakeView[]): { follow: (event: TransferEvent) => void; found: ArrivalsFound } {
  const arrivals: Arrival[] = [];
  const strays: StrayUpload[] = [];
  const ambiguous: AmbiguousUpload[] = [];
  /** the uploads made up for files the log never saw written */
  const unseen = new WeakSet<ArrivedUpload>();
  /**
   * what is at each path now, by server and namespace, then path (the path as the log wrote it
   * where that is already the server's own: one string for the upload, its arrival and this)
   */
  const present = new Map<string, Map<string, Map<string, AtPath>>>();
  /**
   * the names present in each partner's intake now, for the verdict of a new one: only a ready
   * marker's verdict asks (is `x.csv.ok` there?), so only a partner with one keeps them (a
   * year's million names added and hashed for nothing, else)
   */
  const presentNames = new Map<string, Set<string>>();
  // a path where the session's root puts it: two chroots' `/in/x.csv` are two files
  let lastPaths: { server: string; namespace: string; paths: Map<string, AtPath> } | null = null;
  const pathsOf = (event: TransferEvent, view: SessionView) => {
    // nearly every event is of the server and namespace of the one before
    if (lastPaths !== null && lastPaths.server === event.server && lastPaths.namespace === view.namespace) return lastPaths.paths;
    let byNamespace = present.get(event.server);
    if (!byNamespace) present.set(event.server, (byNamespace = new Map<string, Map<string, AtPath>>()));
    let paths = byNamespace.get(view.namespace);
    if (!paths) byNamespace.set(view.namespace, (paths = new Map<string, AtPath>()));
    lastPaths = { server: event.server, namespace: view.namespace, paths };
    return paths;
  };
  const at = (event: TransferEvent, path: string) => {
    const view = intakesFor(intakes, event.user);
    return { paths: pathsOf(event, view), key: serverPath(view.root, absolute(event, path)) };
  };
  const absolute = (event: TransferEvent, path: string) => absoluteIn(intakes, event, path);
  const namesOf = (intake: IntakeView) =>
    intake.readyMarker ? (presentNames.get(intake.partner) ?? presentNames.set(intake.partner, new Set()).get(intake.partner)!) : null;
  /** Its arrival, where `path` is one partner's intake; `ambiguous` (and listed so) where it may be several's; null where it is none. */
  const arrive = (
    event: TransferEvent,
    where: Place | null,
    upload: ArrivedUpload,
    path: string,
    cameBy: Arrival['cameBy'],
    from: string | null,
  ): Arrival | 'ambiguous' | null => {
    if (!where) return null;
    if (where.ambiguous) {
      if (upload.complete) {
        ambiguous.push({
          path,
          upload,
          at: event.at,
          partners: where.ambiguous.map((i) => i.partner).sort(),
          relativePath: where.relative,
        });
      }
      return 'ambiguous';
    }
    let name = where.name;
    let renamedFrom = from === null ? null : posix.basename(from);
    // a log without renames never shows `X.part` becoming `X`: the upload is taken as X's
    if (!upload.renamesLogged && isInProgressName(name)) {
      renamedFrom = name;
      name = finalName(name);
    }
    const names = namesOf(where.intake);
    const verdict = classifyName(name, where.intake, names ?? NO_NAMES);
    const arrival: Arrival = {
      partner: where.intake.partner,
      name,
      path,
      at: event.at,
      atOtherwise: event.atOtherwise ?? null,
      upload,
      renamedFrom,
      cameBy,
      relativePath: where.relative,
      sizeKnown: !unseen.has(upload),
      departed: null,
      overwrittenBy: null,
      verdict: verdict.kind === 'take' ? TAKE : verdict,
    };
    names?.add(name);
    arrivals.push(arrival);
    return arrival;
  };
  const depart = (arrival: Arrival, departed: NonNullable<Arrival['departed']>) => {
    if (arrival.departed) return;
    arrival.departed = departed;
    presentNames.get(arrival.partner)?.delete(arrival.name);
  };
  /** Puts `upload` at `path` (arriving, where it is an intake), replacing what was there. */
  const place = (event: TransferEvent, upload: ArrivedUpload, path: string, cameBy: Arrival['cameBy'], from: string | null) => {
    // where the path is, worked out once for its key and its arrival
    const view = intakesFor(intakes, event.user);
    const where = intakeOf(intakes, event, path, view);
    const paths = pathsOf(event, view);
    const key = serverPath(view.root, absoluteAt(path, where));
    const before = arrivalAt(paths.get(key));
    if (before) depart(before, { at: event.kind === 'upload' ? event.startedAt : event.at, how: 'removed', to: null, leftIntake: false });
    const arrived = arrive(event, where, upload, path, cameBy, from);
    const arrival = arrived === 'ambiguous' ? null : arrived;
    if (before && !before.overwrittenBy) before.overwrittenBy = arrival;
    paths.set(key, arrival ?? upload);
    return arrived;
  };

  const follow = (event: TransferEvent): void => {
    if (event.kind === 'upload') {
      const arrival = place(event, arrivedUpload(event), event.path, 'upload', null);
      // the tool's own temporaries (a probe of the server's RENAME, a copy on its way into a final folder) are no one's upload
      if (arrival === null && event.complete && !isMoverPath(event.path)) strays.push({ path: event.path, upload: event });
      return;
    }
    if (event.kind === 'remove') {
      const { paths, key } = at(event, event.path);
      const here = paths.get(key);
      if (refused(event, here !== undefined)) return;
      paths.delete(key);
      const arrival = arrivalAt(here);
      if (arrival) depart(arrival, { at: event.at, how: 'removed', to: null, leftIntake: false });
      return;
    }
    const { paths, key } = at(event, event.from);
    const source = paths.get(key);
    if (refused(event, source !== undefined)) return;
    let upload = source === undefined ? undefined : uploadAt(source);
    if (!upload) unseen.add((upload = unseenUpload(event)));
    const sourceArrival = arrivalAt(source);
    if (event.kind === 'rename') {
      paths.delete(key);
      const destination = intakeOf(intakes, event, event.to);
      if (sourceArrival) {
        const leftIntake = destination?.intake?.partner !== sourceArrival.partner;
        const location = locationOf(intakes, sourceArrival.partner, absolute(event, event.to));
        depart(sourceArrival, { at: event.at, how: 'renamed', to: event.to, leftIntake, location });
      }
      // a file the log did not see arrive, renamed within or out of no intake: nothing to follow
      if (!source && !destination) return;
      place(event, upload, event.to, 'rename', event.from);
    } else {
      if (!source && !intakeOf(intakes, event, event.to)) return;
      place(event, upload, event.to, 'link', event.from);
    }
  };
  return { follow, found: { arrivals, strays, ambiguous } };
}

/**
 * The ledger's name for an arrival whose log writes white space as something else (ProFTPD's
 * xferlog: `_`): the one name of the partner's ledger records that writes as the logged name.
 * `ambiguous` lists them when several do (`a b.csv` and `a_b.csv` are both `a_b.csv` in the
 * log): the arrival keeps its logged name, and the audit says which it may be.
 */
export function ledgerNameOf(arrival: Arrival, ledgerNames: Iterable<string>): { name: string; ambiguous: string[] } {
  const as = arrival.upload.whiteSpaceAs;
  if (as === null || !arrival.name.includes(as)) return { name: arrival.name, ambiguous: [] };
  const written = (name: string) => name.replace(/\s/g, as);
  const candidates = [...new Set(ledgerNames)].filter((name) => written(name) === arrival.name).sort();
  if (candidates.length === 1) return { name: candidates[0]!, ambiguous: [] };
  return { name: arrival.name, ambiguous: candidates.length > 1 ? candidates : [] };
}

/** What a person should know of how an arrival was read: an ambiguous local time, a relative path, a name the log wrote otherwise. */
export function readingNotes(arrival: Arrival, loggedName: string, ambiguous: string[]): string[] {
  const notes: string[] = [];
  if (arrival.atOtherwise !== null) {
    notes.push(
      `its local time falls in the hour a fall-back repeats: it may also be ${new Date(arrival.atOtherwise).toISOString()}, and is matched under either`,
    );
  }
  if (!arrival.sizeKnown)
    notes.push(`${arrival.cameBy === 'link' ? 'linked' : 'renamed'} from a name the log never saw written: its size is not known`);
  if (arrival.relativePath) notes.push(`written by a path relative to the session's start folder (${arrival.path}), taken as the intake's`);
  if (loggedName !== arrival.name)
    notes.push(`logged as ${JSON.stringify(loggedName)} (the log writes white space as "${arrival.upload.whiteSpaceAs}")`);
  if (ambiguous.length > 0) {
    notes.push(
      `AMBIGUOUS: the log writes ${ambiguous.map((name) => JSON.stringify(name)).join(' and ')} alike: which one it is cannot be told`,
    );
  }
  return notes;
}
