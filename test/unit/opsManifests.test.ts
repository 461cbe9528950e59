import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';
import { Deployment as DeploymentModel } from 'kubernetes-models/apps/v1/Deployment';
import { CronJob as CronJobModel } from 'kubernetes-models/batch/v1/CronJob';
import { Job as JobModel } from 'kubernetes-models/batch/v1/Job';
import { NetworkPolicy as NetworkPolicyModel } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget as PodDisruptionBudgetModel } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap as ConfigMapModel } from 'kubernetes-models/v1/ConfigMap';
import { ServiceAccount as ServiceAccountModel } from 'kubernetes-models/v1/ServiceAccount';
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
import { parseListen } from '../../src/cli/watchEndpoints.js';
import { parseDuration } from '../../src/durations.js';
import { isPostgresUrl } from '../../src/ledger/openLedger.js';

const OPS = fileURLToPath(new URL('../../ops', import.meta.url));

/** The Kubernetes release whose API schema the manifests are checked against: kubernetes-models 4.5.1 ships its schemas. */
const KUBERNETES_API = '1.33';
const KUBE = join(OPS, 'kubernetes');

interface Meta {
  name: string;
  labels?: Record<string, string>;
}
interface EnvEntry {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}
interface Probe {
  httpGet: { path: string; port: string };
  timeoutSeconds: number;
  periodSeconds: number;
  failureThreshold: number;
}
interface Container {
  image: string;
  args: string[];
  env: EnvEntry[];
  ports?: { name: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  securityContext: { allowPrivilegeEscalation: boolean; readOnlyRootFilesystem: boolean; capabilities: { drop: string[] } };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  serviceAccountName: string;
  automountServiceAccountToken: boolean;
  terminationGracePeriodSeconds?: number;
  restartPolicy?: string;
  securityContext: { runAsNonRoot: boolean; runAsUser: number; runAsGroup: number; fsGroup: number; seccompProfile: { type: string } };
  containers: Container[];
  volumes: { name: string; configMap?: { name: string }; secret?: { secretName: string; defaultMode: number }; emptyDir?: object }[];
}
interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: PodSpec;
}
interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: Meta;
}
interface CronJob extends Manifest {
  spec: {
    schedule: string;
    timeZone: string;
    concurrencyPolicy: string;
    startingDeadlineSeconds: number;
    jobTemplate: { spec: { backoffLimit: number; activeDeadlineSeconds: number; template: PodTemplate } };
  };
}
interface Job extends Manifest {
  spec: { backoffLimit: number; activeDeadlineSeconds: number; template: PodTemplate };
}
interface Deployment extends Manifest {
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    strategy: { type: string; rollingUpdate?: { maxUnavailable: number } };
    template: PodTemplate;
  };
}
interface PodDisruptionBudget extends Manifest {
  spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
}
interface NetworkPolicyRule {
  ports: { protocol: string; port: number }[];
}
interface NetworkPolicy extends Manifest {
  spec: {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    ingress: NetworkPolicyRule[];
    egress: NetworkPolicyRule[];
  };
}
interface ConfigMap extends Manifest {
  data: Record<string, string>;
}

/** Every document of every manifest in ops/kubernetes, with its file. */
const DOCUMENTS = readdirSync(KUBE)
  .filter((name) => name.endsWith('.yaml'))
  .flatMap((file) => loadAll(readFileSync(join(KUBE, file), 'utf8')).map((doc) => ({ file, doc: doc as Manifest })));
const one = <T extends Manifest>(kind: string, name?: string): T => {
  const found = DOCUMENTS.filter(({ doc }) => doc.kind === kind && (name === undefined || doc.metadata.name === name));
  expect(
    found.map(({ file }) => file),
    `${kind} ${name ?? ''}`,
  ).toHaveLength(1);
  return found[0]!.doc as T;
};
const cronJob = one<CronJob>('CronJob');
const migrateJob = one<Job>('Job', 'settle-ingest-migrate');
const deployment = one<Deployment>('Deployment');
const configMap = one<ConfigMap>('ConfigMap', 'settle-ingest-config');
const cronPod = cronJob.spec.jobTemplate.spec.template;
const watchPod = deployment.spec.template;
const migratePod = migrateJob.spec.template;
const PODS = [
  ['the migrate Job', migratePod],
  ['the CronJob', cronPod],
  ['the Deployment', watchPod],
] as const;

/** Each kind the manifests may hold, with the model whose compiled schema validates it. */
const MODELS: Record<string, { prototype: { validate(): void } }> = {
  'v1/ConfigMap': ConfigMapModel,
  'v1/ServiceAccount': ServiceAccountModel,
  'batch/v1/Job': JobModel,
  'batch/v1/CronJob': CronJobModel,
  'apps/v1/Deployment': DeploymentModel,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudgetModel,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicyModel,
};

/**
 * A manifest checked against the API schema as `kubectl apply` checks it (server-side field
 * validation is strict since Kubernetes 1.27): every type, required field and enum by the
 * compiled schema, and every field the schema does not know refused by name. The schema reads
 * each field it knows; a field it never read is one it does not know (a `timezone` for `timeZone`
 * would otherwise pass, and the cluster would drop it).
 */
function schemaErrors(doc: Manifest): string[] {
  const model = MODELS[`${doc.apiVersion}/${doc.kind}`];
  if (!model) return [`no schema for ${doc.apiVersion} ${doc.kind}`];
  const unread: (() => string[])[] = [];
  const watched = (value: unknown, path: string): unknown => {
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map((item, at) => watched(item, `${path}[${at}]`));
    const read = new Set<string>();
    const entries = Object.entries(value as Record<string, unknown>);
    unread.push(() => entries.filter(([key]) => !read.has(key)).map(([key]) => `${path}.${key}: not a field of the schema`));
    const inner = Object.fromEntries(entries.map(([key, item]) => [key, watched(item, `${path}.${key}`)]));
    return new Proxy(inner, {
      get(target, key, receiver) {
        if (typeof key === 'string') read.add(key);
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
  };
  try {
    model.prototype.validate.call(watched(doc, ''));
  } catch (err) {
    return [(err as Error).message];
  }
  return unread.flatMap((fields) => fields());
}

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

/** A flag's value among a container's args. */
const argOf = (container: Container, flag: string) => container.args[container.args.indexOf(flag) + 1]!;
/** The volume mounted over `path`, if any, with its mount. */
function volumeAt(pod: PodSpec, path: string) {
  const mount = pod.containers[0]!.volumeMounts.find((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`));
  return mount && { mount, volume: pod.volumes.find((v) => v.name === mount.name)! };
}
/** The config file the pods mount, as the ConfigMap holds it. */
const config = JSON.parse(configMap.data['config.json']!) as Record<string, unknown> & {
  partners: Record<string, { intake: string }>;
};
/** The images' user and group (ops/image/Dockerfile): the pods run as them. */
const dockerfile = readFileSync(join(OPS, 'image', 'Dockerfile'), 'utf8');
const imageUser = /^USER (\d+):(\d+)$/m.exec(dockerfile)!;

describe(`the Kubernetes manifests in ops/kubernetes, against the API schema of Kubernetes ${KUBERNETES_API}`, () => {
  it.each(DOCUMENTS.map(({ file, doc }) => [`${file}: ${doc.kind} ${doc.metadata.name}`, doc]))('%s is valid', (_, doc) => {
    expect(schemaErrors(doc)).toEqual([]);
  });

  it('the check names a misspelled field, a value of the wrong type and a kind it has no schema for', () => {
    const misspelled = structuredClone(cronJob) as unknown as { spec: Record<string, unknown> };
    misspelled.spec.timezone = misspelled.spec.timeZone;
    delete misspelled.spec.timeZone;
    expect(schemaErrors(misspelled as unknown as Manifest)).toEqual(['.spec.timezone: not a field of the schema']);
    const wrongType = structuredClone(deployment);
    (wrongType.spec.template.spec.securityContext as unknown as { runAsUser: string }).runAsUser = 'settle';
    expect(schemaErrors(wrongType).join()).toMatch(/runAsUser must be integer/);
    expect(schemaErrors({ apiVersion: 'v1', kind: 'Podd', metadata: { name: 'x' } })).toEqual(['no schema for v1 Podd']);
  });
});

describe('the pods of ops/kubernetes', () => {
  it('the CronJob: 02:30 in a zone it names, never overlapping itself, no retry of an exit 1, a deadline that ends a run that never ends', () => {
    expect(cronJob.spec.timeZone).toBe('Europe/Amsterdam');
    expect(() => new Intl.DateTimeFormat('en', { timeZone: cronJob.spec.timeZone })).not.toThrow();
    expect(cronJob.spec.concurrencyPolicy).toBe('Forbid');
    expect(cronJob.spec.jobTemplate.spec.backoffLimit).toBe(0);
    expect(cronPod.spec.restartPolicy).toBe('Never');
    // a run the deadline ends is a failed Job to alert on; a load must fit in the claim's lease, a night's loads in the deadline
    const lease = parseDuration(config.claimLease as string)!;
    expect(lease).toBeGreaterThanOrEqual(60);
    expect(cronJob.spec.jobTemplate.spec.activeDeadlineSeconds).toBeGreaterThan(lease);
    expect(cronJob.spec.jobTemplate.spec.activeDeadlineSeconds).toBeLessThan(24 * 3600);
  });

  it('the Deployment: several replicas of watch (the leases divide the partners), none down in a rollout, one at most in a disruption', () => {
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
    expect(deployment.spec.strategy).toMatchObject({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0 } });
    expect(watchPod.spec.containers.map((c) => c.args[0])).toEqual(['watch']);
    const budget = one<PodDisruptionBudget>('PodDisruptionBudget');
    expect(budget.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    expect(budget.spec.minAvailable).toBeGreaterThanOrEqual(1);
    expect(budget.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
  });

  it('the Deployment: probes on the port watch listens on, /healthz for liveness, /readyz (its 5 s check inside the timeout) for readiness', () => {
    const container = watchPod.spec.containers[0]!;
    const listen = parseListen(argOf(container, '--listen'));
    expect(listen.host).toBe('0.0.0.0'); // the kubelet and Prometheus reach the pod's address
    const port = container.ports!.find((p) => p.containerPort === listen.port)!;
    expect(container.livenessProbe!.httpGet).toEqual({ path: '/healthz', port: port.name });
    expect(container.readinessProbe!.httpGet).toEqual({ path: '/readyz', port: port.name });
    expect(container.readinessProbe!.timeoutSeconds).toBeGreaterThan(5);
    // a liveness that fails only after minutes: a wait a minute overdue, seen for a while
    expect(container.livenessProbe!.periodSeconds * container.livenessProbe!.failureThreshold).toBeGreaterThanOrEqual(120);
  });

  it.each(PODS)(
    '%s: uid and gid of the image, non-root, read-only root, no capabilities, no service-account token, seccomp, resources, an image by digest',
    (_, pod) => {
      expect(pod.spec.securityContext).toEqual({
        runAsNonRoot: true,
        runAsUser: Number(imageUser[1]),
        runAsGroup: Number(imageUser[2]),
        fsGroup: Number(imageUser[2]),
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(pod.spec.automountServiceAccountToken).toBe(false);
      const account = one<Manifest & { automountServiceAccountToken: boolean }>('ServiceAccount', pod.spec.serviceAccountName);
      expect(account.automountServiceAccountToken).toBe(false);
      const [container, ...others] = pod.spec.containers;
      expect(others).toEqual([]);
      expect(container!.securityContext).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      // a LimitRange that requires them finds them
      for (const kind of ['requests', 'limits'] as const) {
        expect(Object.keys(container!.resources[kind]).sort(), kind).toEqual(['cpu', 'ephemeral-storage', 'memory']);
      }
      expect(container!.image).toMatch(/^[\w.-]+(?::\d+)?\/[\w./-]+@sha256:[0-9a-f]{64}$/);
      expect(container!.image).toBe(watchPod.spec.containers[0]!.image);
      expect(pod.metadata.labels).toMatchObject({ 'app.kubernetes.io/name': 'settle-ingest' });
    },
  );

  it.each(PODS)("%s: the config from the ConfigMap, every path it names on the pod's volumes, nothing written on the root", (_, pod) => {
    const container = pod.spec.containers[0]!;
    const configPath = argOf(container, '--config');
    const at = volumeAt(pod.spec, configPath)!;
    expect(at.volume.configMap?.name).toBe(configMap.metadata.name);
    expect(configMap.data[configPath.slice(at.mount.mountPath.length + 1)]).toBeDefined();
    expect(at.mount.readOnly).toBe(true);
    // logs and summary lines to the container's log, never to a file on the read-only root; no metrics file
    // either: an emptyDir is world-writable and not sticky, where no file is written (watch serves /metrics)
    expect([config.logFile, config.summaryFile, config.metricsFile]).toEqual([undefined, undefined, undefined]);
    if (pod === migratePod) return; // migrate stages nothing and reads no intake
    expect(volumeAt(pod.spec, config.staging as string)?.volume.emptyDir).toBeDefined();
    for (const key of ['sftpKey', 'knownHosts']) {
      const secret = volumeAt(pod.spec, config[key] as string)?.volume.secret;
      expect(secret?.secretName, key).toBe('settle-ingest-ssh');
      expect(secret!.defaultMode & 0o007, `${key}: nobody else reads it`).toBe(0);
    }
  });

  it.each(PODS)(
    '%s: the ledger and the finance database by URL, each password from a Secret of its own role, none written in the file',
    (_, pod) => {
      const env = pod.spec.containers[0]!.env;
      const secretOf = (url: string, name: string) => {
        expect(isPostgresUrl(url), `${name}=${url}`).toBe(true);
        const password = /^postgres:\/\/[^:@/]+:\$\(([A-Z_]+)\)@/.exec(url)?.[1];
        expect(password, `${name}: a password only as $(VARIABLE)`).toBeDefined();
        // Kubernetes expands $(NAME) only from a variable defined above it
        const from = env
          .slice(
            0,
            env.findIndex((e) => e.name === name),
          )
          .find((e) => e.name === password);
        expect(from?.valueFrom?.secretKeyRef, `${password} from a Secret`).toEqual({ name: expect.any(String), key: 'password' });
        return { user: new URL(url.replace(/\$\([A-Z_]+\)/, 'x')).username, secret: from!.valueFrom!.secretKeyRef!.name };
      };
      const url = (name: string) => env.find((e) => e.name === name)?.value ?? '';
      const ledger = secretOf(url('SETTLE_LEDGER'), 'SETTLE_LEDGER');
      const finance = secretOf(url('DATABASE_URL'), 'DATABASE_URL');
      expect(env.some((e) => e.name === 'PGPASSWORD')).toBe(false);
      if (pod === migratePod) {
        // the migration role for both: it owns the schemas; no run pod holds its password
        expect([ledger, finance]).toEqual([
          { user: 'settle_migrate', secret: 'settle-ingest-migrate' },
          { user: 'settle_migrate', secret: 'settle-ingest-migrate' },
        ]);
      } else {
        expect([ledger, finance]).toEqual([
          { user: 'settle_ledger_rw', secret: 'settle-ingest-ledger' },
          { user: 'settle_ingest', secret: 'settle-ingest-finance' },
        ]);
      }
    },
  );

  it.each(PODS)("%s: its command and flags are the CLI's, by the option table, and so are its variables", (_, pod) => {
    const container = pod.spec.containers[0]!;
    expect(unknownWords(container.args)).toEqual([]);
    const variables = variablesOf(container.args[0]!);
    // a variable the CLI does not read is there only to be expanded into one it reads
    const expanded = new Set(container.env.flatMap((e) => [...(e.value ?? '').matchAll(/\$\(([A-Z_]+)\)/g)].map((m) => m[1]!)));
    expect(container.env.map((e) => e.name).filter((name) => !variables.has(name) && !expanded.has(name))).toEqual([]);
  });

  it('the NetworkPolicy: every pod of them, egress to the database, the SFTP server and DNS only, ingress to the metrics port only', () => {
    const policy = one<NetworkPolicy>('NetworkPolicy');
    for (const [, pod] of PODS) expect(pod.metadata.labels).toMatchObject(policy.spec.podSelector.matchLabels);
    expect(policy.spec.policyTypes.sort()).toEqual(['Egress', 'Ingress']);
    const portOf = (url: string) => Number(new URL(url.replace(/\$\([A-Z_]+\)/, 'x')).port || 5432);
    const database = new Set(
      cronPod.spec.containers[0]!.env.filter((e) => e.value?.startsWith('postgres://')).map((e) => portOf(e.value!)),
    );
    const sftp = new Set(Object.values(config.partners).map((p) => Number(new URL(p.intake).port || 22)));
    const egress = policy.spec.egress.map((rule) => rule.ports.map((p) => `${p.protocol}/${p.port}`).sort());
    expect(egress).toEqual([[...database].map((p) => `TCP/${p}`), [...sftp].map((p) => `TCP/${p}`), ['TCP/53', 'UDP/53']]);
    const metrics = parseListen(argOf(watchPod.spec.containers[0]!, '--listen')).port;
    expect(policy.spec.ingress.map((rule) => rule.ports)).toEqual([[{ protocol: 'TCP', port: metrics }]]);
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

  it('settle-ingest-watch.service runs a command and flags of the CLI, by the option table', () => {
    expect(unknownWords(commandWords(execStart('settle-ingest-watch.service')))).toEqual([]);
  });

  it('would name a flag the tables do not have, or a command', () => {
    expect(unknownWords(['run', '--mode', 'scheduled', '--summary-fil', 'x', '--json'])).toEqual(['run --summary-fil', 'run x']);
    expect(unknownWords(['run', '--mode', '--json'])).toEqual(['run --mode without its value']);
    expect(unknownWords(['rn'])).toEqual(['command rn']);
  });
});
