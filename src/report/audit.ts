import type pg from 'pg';
import type { Intake } from '../intake/intake.js';
import { isInProgressName } from '../intake/names.js';
import { sha256Of } from '../intake/sha256Of.js';
import { ownerIsGone } from '../ledger/owner.js';
import type { Ledger } from '../ledger/ledger.js';
import { loadFacts } from '../load/financeFacts.js';

export interface AuditResult {
  checks: { name: string; discrepancies: string[] }[];
  discrepancies: number;
}

/**
 * Cross-checks the ledger, the finance database and the archive: one load per content,
 * row counts that agree, no stale claims, and no archived file the ledger does not know.
 */
export async function audit(ledger: Ledger, db: pg.ClientBase, schema: string, archive: Intake): Promise<AuditResult> {
  const facts = await loadFacts(db, schema);
  const bySha = new Map(facts.map((f) => [f.sha256, f]));
  const checks: AuditResult['checks'] = [];
  const check = (name: string, discrepancies: string[]) => checks.push({ name, discrepancies });

  check(
    'each content loaded once',
    (await ledger.contentsLoadedTwice()).map((x) => `content ${x.sha256} has ${x.loads} load events in the ledger`),
  );

  const loaded = await ledger.filesInState('loaded');
  check('ledger loads match the finance database', [
    ...loaded.flatMap((f) => {
      const fact = bySha.get(f.sha256);
      if (!fact) return [`${f.name} (${f.sha256}) is loaded in the ledger (run ${f.runId}) but has no file marker in ${schema}.file_loads`];
      if (f.rowCount !== null && f.rowCount !== fact.markerRows) {
        return [`${f.name}: the ledger counts ${f.rowCount} rows, the file marker ${fact.markerRows}`];
      }
      return [];
    }),
    ...facts
      .filter((fact) => !loaded.some((f) => f.sha256 === fact.sha256))
      .map(
        (fact) =>
          `${fact.fileName} (${fact.sha256}) was loaded by run ${fact.runId} but the ledger has no load of it (a lost or replaced ledger?)`,
      ),
  ]);

  check(
    'row counts match the file markers',
    facts
      .filter((f) => f.markerRows !== f.actualRows)
      .map((f) => `${f.fileName}: the file marker says ${f.markerRows} rows, ${schema}.settlement_rows holds ${f.actualRows}`),
  );

  const now = Date.now();
  check(
    'no stale claims',
    (await ledger.filesInState('claimed'))
      .filter(
        (c) =>
          ownerIsGone({ host: c.ownerHost, pid: c.ownerPid, startedAt: c.ownerStartedAt }) ||
          (c.leaseUntil !== null && Date.parse(c.leaseUntil) < now),
      )
      .map(
        (c) => `${c.name} is claimed by run ${c.runId} (pid ${c.ownerPid} on ${c.ownerHost}, lease until ${c.leaseUntil}), which is gone`,
      ),
  );

  const unknown: string[] = [];
  for (const entry of await archive.list()) {
    if (entry.notRegular || isInProgressName(entry.name)) continue; // hidden temporaries of an interrupted move
    const sha = await sha256Of(archive, entry.name);
    if (!(await ledger.knowsContent(sha)).some((f) => f.state === 'loaded')) {
      unknown.push(`${archive.description}/${entry.name} (${sha}) is in the archive but the ledger has no load of its content`);
    }
  }
  check('every archived file is known to the ledger', unknown);

  return { checks, discrepancies: checks.reduce((n, c) => n + c.discrepancies.length, 0) };
}
