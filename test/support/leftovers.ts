/**
 * What a test file leaves outside its own temporary folder (cloned databases): removed after
 * the file passes, kept after it fails. leftoversSetup.ts (a setup file of every project) owns
 * the registry; it lives on globalThis so that it is one whichever module instance asks.
 */
export interface Leftovers {
  root: string;
  items: { what: string; remove(): Promise<void> }[];
}

const KEY = Symbol.for('settle-ingest.test-leftovers');

export function leftovers(): Leftovers | undefined {
  return (globalThis as { [KEY]?: Leftovers })[KEY];
}

export function startLeftovers(root: string): Leftovers {
  const l: Leftovers = { root, items: [] };
  (globalThis as { [KEY]?: Leftovers })[KEY] = l;
  return l;
}

export function removeAfterPassing(what: string, remove: () => Promise<void>): void {
  leftovers()?.items.push({ what, remove });
}
