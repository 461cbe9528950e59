import { RejectError } from '../../src/errors.js';

/** The error of this class `fn` throws: any other error is thrown on, and none fails the test. */
export function thrown<E extends Error>(fn: () => unknown, kind: abstract new (...args: never[]) => E): E {
  try {
    fn();
  } catch (err) {
    if (err instanceof kind) return err;
    throw err;
  }
  throw new Error(`expected a ${kind.name}`);
}

/** The rejection `fn` throws (a bad row, a bad header): its message, line and field. */
export const rejection = (fn: () => unknown): RejectError => thrown(fn, RejectError);
