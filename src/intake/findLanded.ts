import { suffixedName } from './intake.js';

/** One candidate landing place: its size when it is a regular file there, null when nothing is. */
export interface LandingProbe {
  size(candidate: string): Promise<number | null>;
  sha256(candidate: string): Promise<string>;
  location(candidate: string): string;
}

/**
 * Where a move that was begun but never recorded left the file: under its name in the
 * destination folder, or under the suffixed name a clash gave it, with the decided bytes.
 * Suffixes are taken in order, so the search ends at the first free one.
 */
export async function findLanded(name: string, sha256: string, size: number, probe: LandingProbe): Promise<string | null> {
  for (let n = 0; n < 10_000; n++) {
    const candidate = suffixedName(name, n);
    const found = await probe.size(candidate);
    if (found === null) {
      if (n === 0) continue; // the plain name may have been free while a suffix was taken before
      return null;
    }
    if (found === size && (await probe.sha256(candidate)) === sha256) return probe.location(candidate);
  }
  return null;
}
