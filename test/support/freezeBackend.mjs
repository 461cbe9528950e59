// A SETTLE_TEST_HOOK command: freezes (SIGSTOP) the PostgreSQL backend that serves one of the calling
// run's connections, as a hung server would be, and writes its pid to FROZEN_PID_FILE for the test to
// resume it (SIGCONT). FREEZE_APPLICATION names the connection by its application_name
// ('settle-ingest': the finance database's, the default; 'settle-ingest ledger': a PostgreSQL
// ledger's); with FREEZE_ACTIVE set (e.g. 'COPY'), the backend is frozen once it runs a statement
// that begins so. Each backend's pid is the one its session's pg_backend_pid() gives.
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

const application = process.env.FREEZE_APPLICATION ?? 'settle-ingest';
const active = process.env.FREEZE_ACTIVE;
const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
await client.connect();
let pids = [];
// a statement sent before this hook ran may not have started on the server yet
while (pids.length === 0) {
  const r = await client.query(
    `SELECT pid FROM pg_stat_activity
      WHERE application_name = $1 AND datname = current_database() AND pid <> pg_backend_pid()
        AND ($2::text IS NULL OR (state = 'active' AND query LIKE $2 || '%'))`,
    [application, active ?? null],
  );
  pids = r.rows.map((row) => row.pid);
  if (pids.length === 0) await sleep(10);
}
await client.end();
for (const pid of pids) process.kill(pid, 'SIGSTOP');
writeFileSync(process.env.FROZEN_PID_FILE, pids.join('\n'));
