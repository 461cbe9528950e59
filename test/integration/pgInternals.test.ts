import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  PG_MAJOR_READ,
  PG_VERSION,
  assertPgInternals,
  backendPid,
  clientSocket,
  onReadyForQuery,
  sendCancelRequest,
  statementInFlight,
} from '../../src/db/pgInternals.js';
import { PG_QUERY_CANCELED, pgCode } from '../../src/db/pgErrors.js';
import { BIN } from '../support/cli.js';
import { financeDatabase, type FinanceDatabase } from '../support/workspace.js';

let db: FinanceDatabase | undefined;
afterAll(async () => db?.close());

/**
 * The statement watch relies on node-postgres fields it does not declare (src/db/pgInternals.ts).
 * When a pg upgrade changes any of them, this fails here, loudly, rather than the watch going quiet.
 */
describe('the node-postgres internals the statement watch relies on', () => {
  it('are there on a connected client of the installed pg', async () => {
    db = await financeDatabase();
    expect(Number(PG_VERSION.split('.')[0])).toBe(PG_MAJOR_READ);
    expect(() => assertPgInternals(db!.client)).not.toThrow();
    expect(backendPid(db.client)).toBe((await db.client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
    expect(clientSocket(db.client).bytesRead).toBeGreaterThan(0);
  });

  it('tell a statement in flight from an idle client, and each statement’s end', async () => {
    const client = new pg.Client({ connectionString: db!.url });
    await client.connect();
    let ended = 0;
    onReadyForQuery(client, () => ended++);
    expect(statementInFlight(client)).toBe(false);
    const running = client.query('SELECT pg_sleep(0.2)');
    expect(statementInFlight(client)).toBe(true);
    await running;
    expect(statementInFlight(client)).toBe(false);
    expect(ended).toBe(1);
    await client.end();
  });

  it('cancel a running statement with the protocol cancel request', async () => {
    const client = new pg.Client({ connectionString: db!.url });
    await client.connect();
    const sleeping = client.query('SELECT pg_sleep(60)').catch((err: unknown) => err);
    // the cancel goes out once the server runs the statement, as the watch would send it
    await waitUntilRunning(db!.client, backendPid(client)!);
    sendCancelRequest(client);
    expect(pgCode(await sleeping)).toBe(PG_QUERY_CANCELED);
    await client.end();
  });
});

describe('the start of the executable', () => {
  it('loads pg without Node.js’s fetch implementation (bin/settle-ingest.js hides Response while pg asks about Cloudflare)', () => {
    // when this fails, pg asks differently now: look again at the comment in bin/settle-ingest.js
    const report = 'process.on("exit", () => console.error("undici loaded: " + process.moduleLoadList.some((m) => m.includes("undici"))))';
    const r = spawnSync(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(report)}`, BIN, '--version'], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(0);
    expect(r.stderr).toContain('undici loaded: false');
    // and the global is whole again for anything after it
    const after = spawnSync(
      process.execPath,
      [
        '--import',
        `data:text/javascript,${encodeURIComponent('process.on("exit", () => console.error(typeof Response))')}`,
        BIN,
        '--version',
      ],
      {
        encoding: 'utf8',
      },
    );
    expect(after.stderr).toContain('function');
  });
});

/** Polls pg_stat_activity until the backend runs its statement (no sleep decides the outcome). */
async function waitUntilRunning(observer: pg.Client, pid: number): Promise<void> {
  for (;;) {
    const r = await observer.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active'`, [pid]);
    if (r.rowCount === 1) return;
  }
}
