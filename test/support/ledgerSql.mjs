// A SETTLE_TEST_HOOK command: runs the SQL of its first argument on the PostgreSQL ledger in
// DATABASE_URL's database (schema settle_ledger), as a test places the ledger's state at a step:
// a lease run out while its run was paused, say.
import pg from 'pg';

const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
await client.connect();
try {
  await client.query('SET search_path TO settle_ledger');
  await client.query(process.argv[2]);
} finally {
  await client.end();
}
