import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `effect` until it holds, for at most `deadlineMs`: the test waits for what watch does, never for a fixed time. */
export async function until<T>(
  what: string,
  effect: () => Promise<T | undefined | false> | T | undefined | false,
  deadlineMs = 30_000,
): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const value = await effect();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error(`watch did not get there in ${deadlineMs} ms: ${what}`);
    await sleep(50);
  }
}
