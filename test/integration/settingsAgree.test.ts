import { mkdir, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { sampleSettlement } from '../../src/demo/sampleSettlement.js';
import { runCli } from '../support/cli.js';
import { AGREEMENT_CASES, SCHEMA_CANNOT_SAY } from '../support/settingCases.js';
import { sharedFinanceDatabase, Workspace } from '../support/workspace.js';

const db = sharedFinanceDatabase();

/** The schema as the built CLI prints it (`settle-ingest config --json-schema`), compiled by ajv. */
let validate: ValidateFunction;
beforeAll(async () => {
  const printed = await runCli(['config', '--json-schema']);
  expect(printed.status).toBe(0);
  validate = new Ajv2020({ strict: true }).compile(JSON.parse(printed.stdout) as object);
});

/** `settle-ingest config --config FILE` on one config text, in a folder of its own: its exit status and the first line it printed on stderr. */
async function cliReads(text: string): Promise<{ status: number | null; stderr: string }> {
  const folder = await mkdtemp(join(tmpdir(), 'settle-agree-'));
  const path = join(folder, 'config.json');
  await writeFile(path, text);
  const r = await runCli(['config', '--config', path], {}, { cwd: folder });
  return { status: r.status, stderr: r.stderr };
}

const schemaTakes = (text: string): boolean => {
  try {
    return validate(JSON.parse(text));
  } catch {
    return false;
  }
};

/** Runs `work` over `items`, a few at a time (each is a process of its own). */
async function inTurns<T, R>(items: readonly T[], work: (item: T) => Promise<R>, width = 4): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const at = next++;
        out[at] = await work(items[at]!);
      }
    }),
  );
  return out;
}

const textOf = (config: Record<string, unknown> | string) => (typeof config === 'string' ? config : JSON.stringify(config));

describe('`settle-ingest config` and the JSON Schema it prints answer every config alike', () => {
  it('each case, taken by both (exit 0, valid) or refused by both (exit 2 in one line, invalid)', async () => {
    const results = await inTurns(AGREEMENT_CASES, async (c) => ({ c, cli: await cliReads(textOf(c.config)) }));
    const disagreements = results.flatMap(({ c, cli }) => {
      const text = textOf(c.config);
      const got = {
        cli: cli.status === 0 ? 'taken' : cli.status === 2 ? 'refused' : `exit ${cli.status}`,
        schema: schemaTakes(text) ? 'taken' : 'refused',
      };
      const want = c.taken ? 'taken' : 'refused';
      const oneLine = cli.status !== 2 || cli.stderr.trim().split('\n').length === 1;
      return got.cli === want && got.schema === want && oneLine
        ? []
        : [{ config: text.slice(0, 100), want, ...got, stderr: cli.stderr.slice(0, 300) }];
    });
    expect(disagreements).toEqual([]);
    expect(AGREEMENT_CASES.filter((c) => c.issue).length).toBeGreaterThanOrEqual(23);
  });

  it('what the schema cannot say, settle-ingest refuses with exit 2 naming the key', async () => {
    const results = await inTurns(SCHEMA_CANNOT_SAY, async (c) => ({ c, cli: await cliReads(JSON.stringify(c.config)) }));
    for (const { c, cli } of results) {
      expect(schemaTakes(JSON.stringify(c.config)), c.why).toBe(true);
      expect(cli.status, c.why).toBe(2);
      expect(cli.stderr, c.why).toContain(c.key);
    }
  });
});

describe('an empty setting is never "here"', () => {
  for (const key of ['intake', 'ledger', 'logFile', 'transferLog', 'staging', 'archive', 'metricsFile'] as const) {
    it(`"${key}": "" is exit 2 naming it: the file stays in the intake, nothing in the ledger, nothing written beside the config`, async () => {
      const ws = await Workspace.create(db.url);
      const name = 'settle_20261101_a01.csv';
      await ws.put(name, sampleSettlement({ date: '2026-11-01', rows: 2, idPrefix: `EMPTY${key.toUpperCase()}` }).text);
      const configFolder = join(ws.root, 'conf');
      await mkdir(configFolder);
      const config = join(configFolder, 'config.json');
      await writeFile(config, JSON.stringify({ intake: ws.intake, ledger: ws.ledger, stableFor: 0, [key]: '' }));
      for (const command of ['run', 'doctor']) {
        const r = await ws.cli([command, '--config', config]);
        expect(r.status, `${command}: ${r.stderr}`).toBe(2);
        expect(r.stderr.trim().split('\n')).toEqual([
          `settle-ingest: ${config}: "${key}": is empty: give the path (. for the config file's own folder), or leave the setting out`,
        ]);
      }
      expect(await ws.files('intake')).toEqual([name]);
      expect(await ws.files('archive')).toEqual([]);
      expect(ws.ledgerFiles()).toEqual([]);
      expect(ws.runs()).toEqual([]);
      expect(await readdir(configFolder)).toEqual(['config.json']);
    });
  }
});
