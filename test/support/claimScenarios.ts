import { describe, expect, it } from 'vitest';
import type { Ledger } from '../../src/ledger/ledger.js';
import { currentOwner } from '../../src/owner.js';

export const SHA_A = 'a'.repeat(64);
export const SHA_B = 'b'.repeat(64);

/** A ledger with two runs, r1 and r2, recorded. */
export async function withTwoRuns(ledger: Ledger): Promise<Ledger> {
  const ids = ['r1', 'r1', 'r2']; // the second r1 is taken: startRun asks for another id
  expect(await ledger.startRun({ mode: 'manual', host: 'h', pid: 1 }, () => ids.shift()!)).toBe('r1');
  expect(await ledger.startRun({ mode: 'manual', host: 'h', pid: 2 }, () => ids.shift()!)).toBe('r2');
  return ledger;
}

export const claim = (l: Ledger, name: string, sha256: string, runId = 'r1') =>
  l.claim({ name, sha256, size: 10, runId, arrival: '10:1', owner: currentOwner(), leaseSeconds: 3600 });

/** The claim's semantics, which every ledger store must keep alike. */
export function claimSemantics(store: string, fresh: () => Promise<Ledger>): void {
  describe(`the claim (${store} ledger)`, () => {
    it('is won once for a (name, content)', async () => {
      const l = await fresh();
      expect(await claim(l, 'settle_a01.csv', SHA_A)).toBe(true);
      expect(await claim(l, 'settle_a01.csv', SHA_A, 'r2')).toBe(false);
      expect(await l.file('settle_a01.csv', SHA_A)).toMatchObject({ state: 'claimed', runId: 'r1' });
    });

    it('cannot be taken by a renamed twin while the content is claimed, nor once it is loaded', async () => {
      const l = await fresh();
      expect(await claim(l, 'settle_a01.csv', SHA_A)).toBe(true);
      expect(await claim(l, 'settle_a02.csv', SHA_A, 'r2')).toBe(false);
      const f = { name: 'settle_a01.csv', sha256: SHA_A, runId: 'r1' };
      expect(await l.finalizeClaim(f, { state: 'loaded', event: 'loaded', rows: 3 }, {})).toBe(true);
      expect(await claim(l, 'settle_a02.csv', SHA_A, 'r2')).toBe(false);
      expect(await l.liveHolder(SHA_A)).toMatchObject({ name: 'settle_a01.csv', state: 'loaded' });
    });

    it('does not block other content', async () => {
      const l = await fresh();
      expect(await claim(l, 'settle_a01.csv', SHA_A)).toBe(true);
      expect(await claim(l, 'settle_b01.csv', SHA_B)).toBe(true);
    });

    it.each(['failed', 'rejected'] as const)('can be taken again after the content ended %s', async (state) => {
      const l = await fresh();
      expect(await claim(l, 'settle_a01.csv', SHA_A)).toBe(true);
      await l.finalizeClaim({ name: 'settle_a01.csv', sha256: SHA_A, runId: 'r1' }, { state, event: state, reason: 'x' }, {});
      expect(await claim(l, 'settle_a01.csv', SHA_A, 'r2')).toBe(true);
      expect(await l.file('settle_a01.csv', SHA_A)).toMatchObject({ state: 'claimed', runId: 'r2', reason: null });
    });

    it('lets a held twin claim once the content is released', async () => {
      const l = await fresh();
      await claim(l, 'settle_a01.csv', SHA_A);
      await l.recordHeld({ name: 'settle_a02.csv', sha256: SHA_A, size: 10, runId: 'r2' }, {});
      await l.finalizeClaim(
        { name: 'settle_a01.csv', sha256: SHA_A, runId: 'r1' },
        { state: 'failed', event: 'failed', reason: 'db down' },
        {},
      );
      expect(await claim(l, 'settle_a02.csv', SHA_A, 'r2')).toBe(true);
    });

    it("names another run's recorded move of an upload to a run whose own intent for it came later", async () => {
      const l = await fresh();
      const f = { name: 'settle_a01.csv', sha256: SHA_A, runId: 'r1', arrival: '10:1' };
      await claim(l, f.name, SHA_A);
      await l.finalizeClaim(f, { state: 'loaded', event: 'loaded', rows: 3 }, { moveTo: 'archive' });
      expect(await l.markMoved(f, '/archive/settle_a01.csv')).toBe(true);
      // r2 read the same upload before r1 moved it, found its content loaded, and means to move it to duplicates
      await l.intendMove({ ...f, runId: 'r2' }, 'duplicates');
      expect(await l.moveOfArrival(f.name, f.arrival, 'r2')).toEqual({ runId: 'r1', location: '/archive/settle_a01.csv' });
      expect(await l.moveOfArrival(f.name, f.arrival, 'r1')).toEqual({ runId: 'r2', location: null });
      expect(await l.moveOfArrival(f.name, '10:2', 'r2')).toBeUndefined();
    });

    it('finalizes only the claim this run owns', async () => {
      const l = await fresh();
      await claim(l, 'settle_a01.csv', SHA_A);
      expect(await l.finalizeClaim({ name: 'settle_a01.csv', sha256: SHA_A, runId: 'r2' }, { state: 'loaded', event: 'loaded' }, {})).toBe(
        false,
      );
    });

    it('lets adopt record a content only while no delivery of it is live: not its plain copy, not its bytes again', async () => {
      const l = await fresh();
      const SHA_GZ = 'c'.repeat(64); // gzipped bytes whose content is SHA_A
      const leaseSeconds = 3600;
      const req = { name: 'settle_a01.csv.gz', sha256: SHA_GZ, contentSha256: SHA_A, size: 10, runId: 'r1', arrival: '10:1' };
      expect(await l.claim({ ...req, owner: currentOwner(), leaseSeconds })).toBe(true);
      const adopt = (name: string, sha256: string, contentSha256: string) =>
        l.adoptLoaded({ name, sha256, contentSha256, size: 10, runId: 'r2' }, `archive/${name}`, 3);
      expect(await adopt('settle_a02.csv', SHA_A, SHA_A)).toBe(false);
      expect(await adopt('settle_a03.csv.gz', SHA_GZ, SHA_A)).toBe(false);
      expect(await adopt('settle_b01.csv', SHA_B, SHA_B)).toBe(true);
      expect(await l.liveContentHolder(SHA_A)).toMatchObject({ name: 'settle_a01.csv.gz', state: 'claimed' });
      expect(await l.liveContentHolder(SHA_B)).toMatchObject({ name: 'settle_b01.csv', state: 'loaded', contentSha256: SHA_B });
    });

    it('settles a stale claim only once, and only the claim that was judged stale', async () => {
      const l = await fresh();
      await claim(l, 'settle_a01.csv', SHA_A);
      const stale = (await l.file('settle_a01.csv', SHA_A))!;
      expect(await l.settleStaleClaim(stale, 'r2', { state: 'failed', reason: 'lease ran out' })).toBe(true);
      expect(await l.settleStaleClaim(stale, 'r2', { state: 'failed', reason: 'lease ran out' })).toBe(false);
      expect((await l.eventsFor(SHA_A)).map((e) => e.event)).toEqual(['claimed', 'expired']);
    });
  });
}
