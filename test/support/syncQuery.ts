import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';

const PG_MODULE = import.meta.resolve('pg');

/**
 * The worker: each request on a connection of its own (as a process per query had it: no
 * session outlives its statement, none holds a database a test drops or a server it restarts),
 * its answer posted back and the waiting thread woken.
 */
const WORKER = `
const { workerData } = require('node:worker_threads');
const { port, signal } = workerData;
const woken = new Int32Array(signal);
const ready = import(${JSON.stringify(PG_MODULE)}).then(({ default: pg }) => {
  pg.types.setTypeParser(20, Number);
  pg.types.setTypeParser(3802, (v) => v);
  return pg;
});
port.on('message', async ({ url, sql, params, searchPath }) => {
  let answer;
  try {
    const pg = await ready;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      if (searchPath) await client.query('SET search_path TO ' + searchPath);
      answer = { rows: (await client.query(sql, params)).rows };
    } finally {
      await client.end();
    }
  } catch (err) {
    answer = { error: String(err && err.message || err) };
  }
  // as JSON text: times become ISO text, as the SQLite store gives them
  port.postMessage(JSON.stringify(answer));
  Atomics.store(woken, 0, 1);
  Atomics.notify(woken, 0);
});
`;

let channel: { worker: Worker; port: MessagePort; woken: Int32Array } | undefined;

function started(): NonNullable<typeof channel> {
  if (channel) return channel;
  const { port1, port2 } = new MessageChannel();
  const woken = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(WORKER, { eval: true, workerData: { port: port2, signal: woken.buffer }, transferList: [port2] });
  worker.unref();
  port1.unref();
  channel = { worker, port: port1, woken };
  return channel;
}

/**
 * One query on PostgreSQL, synchronously (for the accessors both ledger stores share in
 * test/support/workspace.ts): run on a worker thread of this process while this thread waits,
 * where a Node.js process per query cost a start and a load of `pg` each time. Values come back
 * as the SQLite store gives them: times as ISO text, bigints as numbers, jsonb as its JSON text;
 * `$n` placeholders.
 */
export function querySync<T>(url: string, sql: string, params: unknown[], searchPath?: string): T[] {
  const { port, woken } = started();
  Atomics.store(woken, 0, 0);
  port.postMessage({ url, sql, params, searchPath });
  if (Atomics.wait(woken, 0, 0, 120_000) === 'timed-out') throw new Error(`no answer in 120 s from PostgreSQL to: ${sql}`);
  const text = receiveMessageOnPort(port)?.message as string | undefined;
  const answer = text === undefined ? undefined : (JSON.parse(text) as { rows?: T[]; error?: string });
  if (!answer || answer.error !== undefined) throw new Error(`query failed: ${answer?.error ?? 'no answer'}: ${sql}`);
  return answer.rows!;
}
