import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { withMonitoringTables } from '../../src/cli/monitoringDocs.js';
import { LOG_EVENTS, type LogEvent, type Logger } from '../../src/logEvents.js';
import { ADOPT_OUTCOMES } from '../../src/pipeline/adopt.js';
import { METRICS, renderRunMetrics } from '../../src/report/metricsFile.js';

const root = new URL('../../', import.meta.url).pathname;
const monitoring = readFileSync(join(root, 'docs/MONITORING.md'), 'utf8');

/** Every file under a folder, recursively. */
function filesUnder(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

describe("docs/MONITORING.md's generated tables", () => {
  it('are the tables of src/logEvents.ts and the metrics, exactly (after changing one: npm run build && node scripts/docs-monitoring.mjs)', () => {
    expect(withMonitoringTables(monitoring)).toBe(monitoring);
  });
});

describe('every metric documented', () => {
  it('renders exactly the families of the table, each with its type and help, when watch writes it too', async () => {
    const text = await renderRunMetrics(
      {
        partners: ['adyen'],
        ran: [],
        claimLeaseSeconds: 7200,
        watch: {
          idleCycles: 1,
          workedCycles: 2,
          failedCycles: 0,
          lastCycleAt: Date.now(),
          partners: [{ partner: 'adyen', failures: 0, polled: false }],
        },
      },
      '',
    );
    const rendered = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]);
    expect(rendered).toEqual(Object.entries(METRICS).map(([name, spec]) => [name, spec.type]));
    for (const [name, spec] of Object.entries(METRICS)) expect(text).toContain(`# HELP ${name} ${spec.help}\n`);
    // a run's file has no watch series
    const runOnly = await renderRunMetrics({ partners: ['adyen'], ran: [], claimLeaseSeconds: 7200 }, '');
    const runFamilies = [...runOnly.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]);
    expect(runFamilies).toEqual(Object.entries(METRICS).flatMap(([name, spec]) => ('watch' in spec ? [] : [name])));
  });

  it('names in the docs and ops/ (alert rules, runbook) only metrics the code writes', () => {
    const files = [...filesUnder(join(root, 'docs')), ...filesUnder(join(root, 'ops')), join(root, 'README.md')].filter((path) =>
      /\.(md|yml|yaml|json|sql)$/.test(path),
    );
    const families = Object.keys(METRICS);
    let named = 0;
    for (const path of files) {
      for (const [name] of readFileSync(path, 'utf8').matchAll(/settle_ingest_[a-z_*]+/g)) {
        named += 1;
        const pattern = new RegExp(`^${name.replace(/\*/g, '[a-z_]*')}$`);
        expect(
          families.some((family) => pattern.test(family)),
          `${path.slice(root.length)}: ${name}`,
        ).toBe(true);
      }
    }
    expect(named).toBeGreaterThan(families.length);
  });
});

describe('the log events', () => {
  it('are logged by name through the typed logger, each at its level (the type check refuses any other)', () => {
    const events: unknown[] = [];
    const log: Logger = pino(
      { level: 'debug' },
      { write: (line: string) => void events.push((JSON.parse(line) as { event: unknown }).event) },
    );
    log.info({ event: 'run-started', mode: 'manual', intake: '/srv/in' }, 'run started');
    log.child({ run: 'r-1' }).error({ event: 'failed', file: 'settle_x.csv', reason: 'lost' }, 'failed');
    // @ts-expect-error -- a name of no row of the table
    log.info({ event: 'run-begun' }, 'run begun');
    // @ts-expect-error -- an event at a level the table does not give it
    log.info({ event: 'failed' }, 'failed');
    // @ts-expect-error -- a line without an event
    log.warn('no event');
    // @ts-expect-error -- any string as the event
    log.error({ event: String('failed') }, 'failed');
    expect(events.slice(0, 2)).toEqual(['run-started', 'failed']);
  });

  it('has no row the code never logs', () => {
    const sources = filesUnder(join(root, 'src'))
      .filter((path) => path.endsWith('.ts') && !path.endsWith('/logEvents.ts'))
      .map((path) => readFileSync(path, 'utf8'))
      .join('\n');
    // the events named from an outcome: `adopt-${outcome}`, `reprocess-${outcome}`
    const built: Partial<Record<LogEvent, string>> = {
      ...Object.fromEntries(ADOPT_OUTCOMES.map((outcome) => [`adopt-${outcome}`, 'event: `adopt-${outcome}`'])),
      'reprocess-rejected': 'event: `reprocess-${outcome}`',
      'reprocess-failed': 'event: `reprocess-${outcome}`',
    };
    for (const name of Object.keys(LOG_EVENTS) as LogEvent[]) {
      expect(sources.includes(built[name] ?? `'${name}'`), name).toBe(true);
    }
  });
});
