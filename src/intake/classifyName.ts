import { finalName, isInProgressName, isUnsafeName } from './names.js';

export type NameVerdict = { kind: 'take' } | { kind: 'known' | 'ignored' | 'not_ready'; reason: string };

/**
 * What a listed name is to this run. Nothing is passed over silently: a name that the
 * pattern does not take is counted `ignored` (a partner renaming its files must not look
 * like an idle night) unless --ignore names it as a known neighbour; an upload still under
 * a temporary name of a file the pattern takes is `not_ready`.
 */
export function classifyName(
  name: string,
  opts: { pattern: RegExp; ignore: RegExp[]; readyMarker?: string | undefined },
  present: Pick<ReadonlySet<string>, 'has'>,
): NameVerdict {
  if (isUnsafeName(name)) return { kind: 'ignored', reason: 'the name could escape its folder: left untouched' };
  // a name that is not UTF-8 reaches us with U+FFFD in it: it cannot be opened or recorded as it is
  if (name.includes('\uFFFD')) return { kind: 'ignored', reason: 'the name is not valid UTF-8: left untouched' };
  if (opts.ignore.some((re) => re.test(name))) return { kind: 'known', reason: 'a known neighbour (--ignore)' };
  if (isInProgressName(name)) {
    return opts.pattern.test(finalName(name))
      ? { kind: 'not_ready', reason: 'still uploading under a temporary name' }
      : { kind: 'ignored', reason: `a temporary or hidden name that the pattern does not take` };
  }
  const marker = opts.readyMarker;
  // a ready marker is its file's sidecar: it moves with the file and is not a file of its own
  if (marker && name.endsWith(marker) && opts.pattern.test(name.slice(0, -marker.length))) {
    return { kind: 'known', reason: 'a ready marker: it moves with its file' };
  }
  if (!opts.pattern.test(name)) return { kind: 'ignored', reason: `the pattern does not take this name` };
  if (marker && !present.has(name + marker)) return { kind: 'not_ready', reason: `waiting for its ready marker ${name}${marker}` };
  return { kind: 'take' };
}
