import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import {
  COMMAND_FLAGS,
  CONFIG_OPTION,
  OPTION_TABLE,
  PARTNER_OPTION,
  commandFlagsOf,
  optionsOf,
  type CommandName,
} from '../../src/config/optionTable.js';
import { isPostgresUrl } from '../../src/ledger/openLedger.js';

const OPS = fileURLToPath(new URL('../../ops', import.meta.url));

interface EnvEntry {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}
interface Container {
  args: string[];
  env: EnvEntry[];
  securityContext: { allowPrivilegeEscalation: boolean; readOnlyRootFilesystem: boolean; capabilities: { drop: string[] } };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  terminationGracePeriodSeconds: number;
  securityContext: { runAsNonRoot: boolean };
  containers: Container[];
  volumes: { name: string; configMap?: { name: string }; secret?: { secretName: string }; emptyDir?: object }[];
}
interface CronJob {
  kind: 'CronJob';
  spec: {
    concurrencyPolicy: string;
    jobTemplate: { spec: { backoffLimit: number; template: { spec: PodSpec & { restartPolicy: string } } } };
  };
}
interface Deployment {
  kind: 'Deployment';
  spec: { replicas: number; strategy: { type: string; rollingUpdate?: { maxUnavailable: number } }; template: { spec: PodSpec } };
}

const manifest = <T>(name: string) => load(readFileSync(join(OPS, 'kubernetes', name), 'utf8')) as T;
const cronJob = manifest<CronJob>('settle-ingest-cronjob.yaml');
const deployment = manifest<Deployment>('settle-ingest-watch-deployment.yaml');
const cronPod = cronJob.spec.jobTemplate.spec.template.spec;
const watchPod = deployment.spec.template.spec;

/** Every command the option table and COMMAND_FLAGS name: a command not among them is not the CLI's. */
const TABLE_COMMANDS = new Set<string>(
  [...Object.values(OPTION_TABLE), CONFIG_OPTION, PARTNER_OPTION, ...Object.values(COMMAND_FLAGS)].flatMap(
    (spec) => spec.commands as readonly string[],
  ),
);

/** The flags a command takes by the tables (its settings, its own flags, the program's), each with whether a value follows it. */
function flagsOf(command: string): Map<string, boolean> {
  const flags = new Map<string, boolean>();
  for (const { spec } of optionsOf(command as CommandName)) if (spec.flag) flags.set(spec.flag, spec.kind !== 'switch');
  for (const own of [...commandFlagsOf(command), ...commandFlagsOf('settle-ingest')]) flags.set(own.flag, own.value !== undefined);
  return flags;
}

/** The words after the program, checked against the tables: a renamed or dropped flag is named here. */
function unknownWords(words: string[]): string[] {
  const [command = '', ...rest] = words;
  if (!TABLE_COMMANDS.has(command)) return [`command ${command}`];
  const flags = flagsOf(command);
  const unknown: string[] = [];
  for (let at = 0; at < rest.length; at++) {
    const word = rest[at]!;
    const takesValue = flags.get(word);
    if (takesValue === undefined) unknown.push(`${command} ${word}`);
    else if (takesValue && (rest[at + 1] === undefined || rest[at + 1]!.startsWith('--')))
      unknown.push(`${command} ${word} without its value`);
    else if (takesValue) at++;
  }
  return unknown;
}

/** The variables a command reads by the option table; libpq's PG* (docs/OPERATING.md) too. */
function variablesOf(command: string): Set<string> {
  const settings = optionsOf(command as CommandName).flatMap(({ spec }) => (spec.env ? [spec.env] : []));
  return new Set([...settings, 'PGPASSWORD', 'PGHOST', 'PGPORT', 'PGUSER', 'PGDATABASE', 'PGSSLMODE', 'PGSSLROOTCERT']);
}

/** `watch` is built on another branch (issue 34): its words are checked once the tables name it. */
const tablesHaveWatch = TABLE_COMMANDS.has('watch');

describe('the Kubernetes manifests in ops/kubernetes', () => {
  it('the CronJob never overlaps its own next run and does not retry a run that exited 1', () => {
    expect(cronJob.kind).toBe('CronJob');
    expect(cronJob.spec.concurrencyPolicy).toBe('Forbid');
    expect(cronJob.spec.jobTemplate.spec.backoffLimit).toBe(0);
    expect(cronPod.restartPolicy).toBe('Never');
  });

  it('the Deployment runs several replicas of watch (the leases divide the partners), none down during a rollout', () => {
    expect(deployment.kind).toBe('Deployment');
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
    expect(deployment.spec.strategy).toMatchObject({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0 } });
    expect(watchPod.containers.map((c) => c.args[0])).toEqual(['watch']);
  });

  it.each([
    ['CronJob', cronPod],
    ['Deployment', watchPod],
  ])('the %s: a PostgreSQL ledger by URL, its password from a Secret, nothing secret written in the file', (_, pod) => {
    const env = new Map(pod.containers[0]!.env.map((entry) => [entry.name, entry]));
    for (const name of ['SETTLE_LEDGER', 'DATABASE_URL']) {
      const url = env.get(name)?.value ?? '';
      expect(isPostgresUrl(url), `${name}=${url}`).toBe(true);
      expect(new URL(url).password, name).toBe('');
    }
    expect(env.get('PGPASSWORD')?.valueFrom?.secretKeyRef).toEqual({ name: 'settle-ingest', key: expect.any(String) });
    // the same ledger, database and secret for both: one ledger the job and watch share
    expect(pod.containers[0]!.env).toEqual(cronPod.containers[0]!.env);
  });

  it.each([
    ['CronJob', cronPod],
    ['Deployment', watchPod],
  ])('the %s: non-root, read-only root, no capabilities; config from a ConfigMap, staging on a volume of its own', (_, pod) => {
    const [container] = pod.containers;
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(container!.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    // SIGTERM finishes the file in hand: the same time for it in both
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(300);
    expect(pod.terminationGracePeriodSeconds).toBe(cronPod.terminationGracePeriodSeconds);
    const mounted = (dir: string) => {
      const mount = container!.volumeMounts.find((m) => m.mountPath === dir);
      return pod.volumes.find((v) => v.name === mount?.name);
    };
    const args = container!.args;
    const config = args[args.indexOf('--config') + 1]!;
    expect(mounted(dirname(config))?.configMap).toBeDefined();
    const staging = container!.env.find((entry) => entry.name === 'SETTLE_STAGING')?.value ?? '';
    expect(mounted(staging)?.emptyDir).toBeDefined();
  });

  it("the CronJob's command and flags are the CLI's, by the option table, and so are its variables", () => {
    const container = cronPod.containers[0]!;
    expect(unknownWords(container.args)).toEqual([]);
    const variables = variablesOf(container.args[0]!);
    expect(container.env.map((entry) => entry.name).filter((name) => !variables.has(name))).toEqual([]);
  });

  it.skipIf(!tablesHaveWatch)("the Deployment's command and flags are the CLI's, by the option table, and so are its variables", () => {
    const container = watchPod.containers[0]!;
    expect(unknownWords(container.args)).toEqual([]);
    const variables = variablesOf(container.args[0]!);
    expect(container.env.map((entry) => entry.name).filter((name) => !variables.has(name))).toEqual([]);
  });
});

/** The command line of a unit's ExecStart (or the cron job), from the program's name on. */
function commandWords(line: string): string[] {
  const words = line.split(/\s+/);
  return words.slice(words.findIndex((word) => /(^|[/(])settle-ingest$/.test(word)) + 1).filter((word) => !word.startsWith('2>'));
}

describe('the command lines of the systemd units and the cron job in ops/', () => {
  const execStart = (unit: string) => /^ExecStart=(.*)$/m.exec(readFileSync(join(OPS, unit), 'utf8'))![1]!;
  const cronLine = readFileSync(join(OPS, 'cron.d', 'settle-ingest'), 'utf8')
    .split('\n')
    .find((line) => /^\d/.test(line))!;

  it.each([
    ['settle-ingest.service', execStart('settle-ingest.service')],
    ['settle-ingest@.service', execStart('settle-ingest@.service')],
    ['cron.d/settle-ingest', /\(settle-ingest [^)]*/.exec(cronLine)![0]],
  ])('%s runs a command and flags of the CLI, by the option table', (_, line) => {
    expect(unknownWords(commandWords(line))).toEqual([]);
  });

  it.skipIf(!tablesHaveWatch)('settle-ingest-watch.service runs a command and flags of the CLI, by the option table', () => {
    expect(unknownWords(commandWords(execStart('settle-ingest-watch.service')))).toEqual([]);
  });

  it('would name a flag the tables do not have, or a command', () => {
    expect(unknownWords(['run', '--mode', 'scheduled', '--summary-fil', 'x', '--json'])).toEqual(['run --summary-fil', 'run x']);
    expect(unknownWords(['run', '--mode', '--json'])).toEqual(['run --mode without its value']);
    expect(unknownWords(['rn'])).toEqual(['command rn']);
  });
});
