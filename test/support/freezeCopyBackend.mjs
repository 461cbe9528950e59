// A SETTLE_TEST_HOOK command: freezes (SIGSTOP) the backend that runs the calling run's COPY,
// as a hung server would be, and writes its pid to FROZEN_PID_FILE for the test to resume it.
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
await client.connect();
let pids = [];
// the COPY was sent before this hook ran; the server may not have started it yet
while (pids.length === 0) {
  const r = await client.query(
    `SELECT pid FROM pg_stat_activity
      WHERE application_name = 'settle-ingest' AND datname = current_database() AND state = 'active' AND query LIKE 'COPY%'`,
  );
  pids = r.rows.map((row) => row.pid);
  if (pids.length === 0) await sleep(10);
}
await client.end();
for (const pid of pids) process.kill(pid, 'SIGSTOP');
writeFileSync(process.env.FROZEN_PID_FILE, pids.join('\n'));
