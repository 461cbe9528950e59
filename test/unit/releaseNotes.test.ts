import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { latestMigration } from '../../src/db/migrationFiles.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const notes = readFileSync(join(ROOT, 'RELEASE_NOTES.md'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

const SEMVER = /^(\d+)\.(\d+)\.(\d+)$/;

/** The released versions of RELEASE_NOTES.md, newest first, each with its date and its text up to the next heading. */
function releases(): { version: string; date: string; text: string }[] {
  const sections = notes.split(/^## /m).slice(1);
  return sections
    .map((section) => ({ heading: section.slice(0, section.indexOf('\n')), text: section }))
    .filter(({ heading }) => /^\d/.test(heading))
    .map(({ heading, text }) => {
      const m = /^(\S+) — (\d{4}-\d{2}-\d{2})$/.exec(heading);
      if (!m) throw new Error(`release heading "## ${heading}" is not "## X.Y.Z — YYYY-MM-DD"`);
      return { version: m[1]!, date: m[2]!, text };
    });
}

const parts = (version: string) => SEMVER.exec(version)!.slice(1).map(Number);
const newer = (a: string, b: string) => {
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! > y[i]!;
  return false;
};
/** `ledger schema 15`, `finance schema 3` as an entry states them. */
const schema = (text: string, which: 'ledger' | 'finance') => Number(new RegExp(`${which} schema (\\d+)`, 'i').exec(text)?.[1]);

describe('the version follows RELEASE_NOTES.md', () => {
  it('package.json says the newest release, whose heading is semver and dated', () => {
    const all = releases();
    expect(all.length).toBeGreaterThan(0);
    for (const release of all) expect(release.version, release.version).toMatch(SEMVER);
    expect(pkg.version).toBe(all[0]!.version);
  });

  it('lists releases newest first, each newer than the one below it, never two on one version', () => {
    const all = releases();
    for (let i = 1; i < all.length; i++) {
      expect(newer(all[i - 1]!.version, all[i]!.version), `${all[i - 1]!.version} above ${all[i]!.version}`).toBe(true);
      expect(all[i - 1]!.date >= all[i]!.date, `${all[i - 1]!.date} above ${all[i]!.date}`).toBe(true);
    }
  });

  it('names the ledger and finance schema of every release, and Pending names the migrations this tree ships', () => {
    for (const release of releases()) {
      expect(schema(release.text, 'ledger'), release.version).toBeGreaterThan(0);
      expect(schema(release.text, 'finance'), release.version).toBeGreaterThan(0);
    }
    const pending = notes.slice(notes.indexOf('## Pending'), notes.indexOf('\n## ', notes.indexOf('## Pending') + 1));
    expect(schema(pending, 'ledger')).toBe(latestMigration('ledger'));
    expect(latestMigration('ledger-pg')).toBe(latestMigration('ledger'));
    expect(schema(pending, 'finance')).toBe(latestMigration('finance'));
  });

  it('tags the ops images with the version', () => {
    const folder = join(ROOT, 'ops', 'kubernetes');
    for (const file of readdirSync(folder)) {
      for (const m of readFileSync(join(folder, file), 'utf8').matchAll(/image: \S+\/settle-ingest:(\S+)/g))
        expect(m[1], file).toBe(pkg.version);
    }
  });

  it('has the upgrade steps: back up both kinds of ledger, stop, install, print the SQL, migrate, doctor', () => {
    const upgrading = notes.slice(notes.indexOf('## Upgrading'), notes.indexOf('## Pending')).replace(/\s+/g, ' ');
    for (const step of [
      'systemctl stop settle-ingest.timer',
      'settle-ingest ledger backup',
      'pg_dump --schema=settle_ledger',
      'npm install -g',
      'migrate --config /etc/settle-ingest/config.json --print-sql',
      'settle-ingest migrate --config',
      'settle-ingest doctor',
    ])
      expect(upgrading).toContain(step);
  });
});
