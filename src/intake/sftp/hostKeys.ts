import { createHash, createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { UsageError } from '../../errors.js';

/**
 * Host key types refused whatever known_hosts says: DSA keys are 1024-bit with SHA-1, and
 * OpenSSH itself stopped accepting them. A server that offers nothing else is refused (exit 2).
 */
export const REFUSED_HOST_KEY_TYPES: readonly string[] = ['ssh-dss'];

const REFUSED_WHY =
  'DSA (ssh-dss) host keys are refused: 1024-bit, SHA-1, no longer accepted by OpenSSH; ask for an ed25519, ECDSA or RSA host key';

/** `SHA256:…` as `ssh-keygen -lf` prints it: unpadded base64 of the key blob's SHA-256. */
export function fingerprint(keyBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '')}`;
}

/** The key type named at the start of an SSH public key blob (`ssh-ed25519`, `ecdsa-sha2-nistp256`, …). */
export function keyType(keyBlob: Buffer): string {
  if (keyBlob.length < 4) return 'unknown';
  const len = keyBlob.readUInt32BE(0);
  return keyBlob.subarray(4, 4 + len).toString('latin1');
}

/** How OpenSSH names a host in known_hosts: bare on port 22, else `[host]:port`. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

interface KnownHostLine {
  marker: '@revoked' | '@cert-authority' | null;
  patterns: string[];
  type: string;
  key: Buffer;
}

function parseLine(line: string): KnownHostLine | null {
  const fields = line.trim().split(/\s+/);
  if (fields.length === 0 || fields[0] === '' || fields[0]!.startsWith('#')) return null;
  let marker: KnownHostLine['marker'] = null;
  if (fields[0] === '@revoked' || fields[0] === '@cert-authority') marker = fields.shift() as KnownHostLine['marker'];
  const [hosts, type, key] = fields;
  if (!hosts || !type || !key) return null;
  return { marker, patterns: hosts.split(','), type, key: Buffer.from(key, 'base64') };
}

/** OpenSSH's pattern language: `*` and `?` wildcards; brackets are literal (`[host]:2222`). */
function wildcardMatch(pattern: string, name: string): boolean {
  const re = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replaceAll('*', '.*')
    .replaceAll('?', '.');
  return new RegExp(`^${re}$`, 'i').test(name);
}

function hashedMatch(pattern: string, name: string): boolean {
  const [, magic, salt, hash] = pattern.split('|');
  if (magic !== '1' || !salt || !hash) return false;
  const mac = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest();
  return mac.equals(Buffer.from(hash, 'base64'));
}

function lineMatches(line: KnownHostLine, name: string): boolean {
  let matched = false;
  for (const p of line.patterns) {
    const negated = p.startsWith('!');
    const pattern = negated ? p.slice(1) : p;
    const hit = pattern.startsWith('|1|') ? hashedMatch(pattern, name) : wildcardMatch(pattern, name);
    if (hit && negated) return false;
    if (hit) matched = true;
  }
  return matched;
}

export type HostKeyVerdict = { ok: true } | { ok: false; reason: string };

/**
 * Verifies an offered host key, mandatorily: against a pinned fingerprint, or else against
 * known_hosts entries for this host (hashed names and `[host]:port` included). Unknown or
 * different keys are refused; there is no trust on first use.
 */
export class HostKeyPolicy {
  private constructor(
    private readonly name: string,
    private readonly lines: KnownHostLine[],
    private readonly pinned: string | undefined,
    private readonly source: string,
  ) {}

  static pinned(fingerprint: string, host: string, port: number): HostKeyPolicy {
    if (!/^SHA256:[A-Za-z0-9+/]{43}$/.test(fingerprint)) {
      throw new UsageError(
        `host key fingerprint ${JSON.stringify(fingerprint)} must look like SHA256:<43 base64 characters> (ssh-keygen -lf)`,
      );
    }
    return new HostKeyPolicy(knownHostsName(host, port), [], fingerprint, 'the pinned fingerprint');
  }

  static fromKnownHosts(path: string, host: string, port: number): HostKeyPolicy {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new UsageError(`known_hosts file ${path} cannot be read (${(err as Error).message}): host keys are always verified`, {
        cause: err,
      });
    }
    const name = knownHostsName(host, port);
    const lines = text
      .split('\n')
      .map(parseLine)
      .filter((l): l is KnownHostLine => l !== null && lineMatches(l, name));
    return new HostKeyPolicy(name, lines, undefined, path);
  }

  /** The lines that may vouch for a key: not markers, not a refused type. */
  private trusted(): KnownHostLine[] {
    return this.lines.filter((l) => l.marker === null && !REFUSED_HOST_KEY_TYPES.includes(l.type));
  }

  /** Key types known for the host, to ask the server for those first (never a refused one). */
  knownTypes(): string[] {
    return [...new Set(this.trusted().map((l) => l.type))];
  }

  verify(offered: Buffer): HostKeyVerdict {
    const offeredFingerprint = fingerprint(offered);
    const offeredDesc = `${keyType(offered)} key ${offeredFingerprint}`;
    if (REFUSED_HOST_KEY_TYPES.includes(keyType(offered))) {
      return { ok: false, reason: `host ${this.name} offered ${offeredDesc}: ${REFUSED_WHY}` };
    }
    if (this.pinned !== undefined) {
      return offeredFingerprint === this.pinned
        ? { ok: true }
        : {
            ok: false,
            reason: `host key of ${this.name} does not match the pinned fingerprint ${this.pinned}: the server offered ${offeredDesc}`,
          };
    }
    if (this.lines.some((knownHostLine) => knownHostLine.marker === '@revoked' && knownHostLine.key.equals(offered))) {
      return { ok: false, reason: `host key of ${this.name} is marked @revoked in ${this.source}: ${offeredDesc}` };
    }
    const trusted = this.trusted();
    if (trusted.some((l) => l.key.equals(offered))) return { ok: true };
    if (trusted.length > 0) {
      return {
        ok: false,
        reason: `host key of ${this.name} has CHANGED: ${this.source} knows ${trusted.map((l) => `${l.type} ${fingerprint(l.key)}`).join(', ')}, the server offered ${offeredDesc}; someone may be intercepting the connection`,
      };
    }
    const refused = this.lines.filter((l) => l.marker === null && REFUSED_HOST_KEY_TYPES.includes(l.type));
    if (refused.length > 0) {
      return {
        ok: false,
        reason: `${this.source} has only a ${refused[0]!.type} key for ${this.name} (${REFUSED_WHY}); the server offered ${offeredDesc}: check it out of band, then add it`,
      };
    }
    return {
      ok: false,
      reason: `host ${this.name} is not in ${this.source}: the server offered ${offeredDesc}; check it out of band, then add it (ssh-keyscan -p PORT HOST) or pin it with --host-key-fingerprint`,
    };
  }
}
