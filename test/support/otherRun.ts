import { createHash } from 'node:crypto';
import type { Workspace } from './workspace.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Stages another run's claim on `name`, as if that run were loading it right now. */
export function stageClaim(ws: Workspace, name: string, text: string, owner: { host: string; pid: number; startedAt: string }) {
  ws.withLedger((l) => {
    const at = new Date().toISOString();
    l.prepare(`INSERT INTO runs (run_id, mode, host, pid, started_at) VALUES ('r-other', 'scheduled', ?, ?, ?)`).run(
      owner.host,
      owner.pid,
      at,
    );
    l.prepare(
      `INSERT INTO processed_files (name, sha256, state, run_id, size, owner_host, owner_pid, owner_started_at, lease_until, first_seen_at, updated_at)
       VALUES (?, ?, 'claimed', 'r-other', ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      name,
      sha256(text),
      Buffer.byteLength(text),
      owner.host,
      owner.pid,
      owner.startedAt,
      new Date(Date.now() + 3600_000).toISOString(),
      at,
      at,
    );
  });
}
