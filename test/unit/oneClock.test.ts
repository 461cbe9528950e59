import { describe, expect, it } from 'vitest';
import { measureSkew, skewText } from '../../src/clock.js';
import { leaseRunOut, staleClaimReason } from '../../src/ledger/staleClaim.js';
import { pgClockSql } from '../../src/ledger/sqlPort.js';

const NOW = Date.parse('2026-07-01T12:00:00.000Z');
const clock = { nowMs: NOW, leaseSeconds: 7200 };
const at = (seconds: number) => new Date(NOW + seconds * 1000).toISOString();

describe("a lease's end, judged by the ledger's clock (the one rule for claims and partner leases)", () => {
  it('holds from now until now plus --claim-lease (and the 5 s of skew allowed)', () => {
    expect(leaseRunOut(at(1), clock)).toBeNull();
    expect(leaseRunOut(at(7200), clock)).toBeNull();
    expect(leaseRunOut(at(7205), clock)).toBeNull();
  });

  it('has run out once its end has passed', () => {
    expect(leaseRunOut(at(-1), clock)).toBe(`its lease ran out at ${at(-1)}`);
    expect(leaseRunOut('-infinity', clock)).toBe('its lease ran out at -infinity');
  });

  it('holds nothing when its end lies further ahead than any lease is given: next year, infinity, a year past JavaScript', () => {
    expect(leaseRunOut(at(7206), clock)).toMatch(
      /^its lease runs to .*, past the ledger's now plus --claim-lease \(2h\), longer than any lease is given$/,
    );
    expect(leaseRunOut(at(365 * 86_400), clock)).toMatch(/past the ledger's now plus --claim-lease/);
    expect(leaseRunOut('infinity', clock)).toMatch(/^its lease runs to infinity, past/);
    expect(leaseRunOut('+275760-09-14T00:00:00.000Z', clock)).toMatch(/past the ledger's now/);
    expect(leaseRunOut(at(3 * 86_400), { ...clock, leaseSeconds: 2 * 86_400 })).toMatch(/--claim-lease \(2d\)/);
  });

  it('is no lease at all when there is none', () => {
    expect(leaseRunOut(null, clock)).toBeNull();
  });

  it("makes another host's claim stale by its lease alone; this host's gone process at once", () => {
    const other = { ownerHost: 'no-such-host', ownerPid: 1, ownerStartedAt: '1' };
    expect(staleClaimReason({ ...other, leaseUntil: at(600) }, clock)).toBeNull();
    expect(staleClaimReason({ ...other, leaseUntil: 'infinity' }, clock)).toMatch(/^its lease runs to infinity/);
  });
});

describe("the ledger's clock in PostgreSQL's statements", () => {
  it("is the server's now(), cut to milliseconds; the test build's world shift moves it; a lease's end keeps its placeholder", () => {
    expect(pgClockSql('INSERT INTO t (a, at) VALUES (?, ledger_now())', 0)).toBe(
      "INSERT INTO t (a, at) VALUES (?, date_trunc('milliseconds', now()))",
    );
    expect(pgClockSql('UPDATE t SET lease_until = ledger_after(?) WHERE at < ledger_now()', -3_600_000)).toBe(
      "UPDATE t SET lease_until = (date_trunc('milliseconds', now() + interval '-3600000 milliseconds') + make_interval(secs => ?)) " +
        "WHERE at < date_trunc('milliseconds', now() + interval '-3600000 milliseconds')",
    );
  });
});

describe("this host's clock against a server's", () => {
  it('is read half-way through the round trip, and said as a person reads it', async () => {
    const skew = await measureSkew(() => Promise.resolve(Date.now() - 10_800_000));
    expect(skew.skewed).toBe(true);
    expect(Math.abs(skew.seconds - 10_800)).toBeLessThan(5);
    expect(skewText({ seconds: 10_800 }, "the ledger server's")).toBe("10800.0 s (3h) ahead of the ledger server's");
    expect(skewText({ seconds: -12.44 }, "the database server's")).toBe("12.4 s behind the database server's");
    expect(skewText({ seconds: 365 * 86_400 }, 'x')).toBe('31536000.0 s (365d) ahead of x');
    expect((await measureSkew(() => Promise.resolve(Date.now()))).skewed).toBe(false);
  });
});
