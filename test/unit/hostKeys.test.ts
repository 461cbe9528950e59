import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fingerprint, HostKeyPolicy, keyType } from '../../src/intake/sftp/hostKeys.js';
import { parseSftpUrl } from '../../src/intake/sftp/url.js';

/** A syntactically real ssh-ed25519 public key blob. */
function ed25519Blob(seed: number): Buffer {
  const type = Buffer.from('ssh-ed25519');
  const key = Buffer.alloc(32, seed);
  const out = Buffer.alloc(4 + type.length + 4 + key.length);
  out.writeUInt32BE(type.length, 0);
  type.copy(out, 4);
  out.writeUInt32BE(key.length, 4 + type.length);
  key.copy(out, 8 + type.length);
  return out;
}

const A = ed25519Blob(1);
const B = ed25519Blob(2);
const line = (hosts: string, blob: Buffer, marker = '') => `${marker}${marker ? ' ' : ''}${hosts} ssh-ed25519 ${blob.toString('base64')}`;

function knownHosts(...lines: string[]): string {
  const path = join(mkdtempSync(join(tmpdir(), 'settle-kh-')), 'known_hosts');
  writeFileSync(path, `# comment\n\n${lines.join('\n')}\n`);
  return path;
}

function hashed(name: string): string {
  const salt = randomBytes(20);
  return `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`;
}

describe('host key verification', () => {
  it('prints fingerprints the way ssh-keygen -l does', () => {
    expect(fingerprint(A)).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(keyType(A)).toBe('ssh-ed25519');
  });

  it('accepts a plain entry on port 22 and a [host]:port entry on another port', () => {
    const path = knownHosts(line('sftp.example,10.0.0.5', A), line('[sftp.example]:2222', B));
    expect(HostKeyPolicy.fromKnownHosts(path, 'sftp.example', 22).verify(A)).toEqual({ ok: true });
    expect(HostKeyPolicy.fromKnownHosts(path, 'sftp.example', 2222).verify(B)).toEqual({ ok: true });
    expect(HostKeyPolicy.fromKnownHosts(path, 'sftp.example', 2222).verify(A).ok).toBe(false);
  });

  it('matches hashed host names', () => {
    const path = knownHosts(line(hashed('[sftp.example]:2222'), A));
    expect(HostKeyPolicy.fromKnownHosts(path, 'sftp.example', 2222).verify(A)).toEqual({ ok: true });
    expect(HostKeyPolicy.fromKnownHosts(path, 'other.example', 2222).verify(A).ok).toBe(false);
  });

  it('honours wildcards and negations', () => {
    const path = knownHosts(line('*.partner.example,!evil.partner.example', A));
    expect(HostKeyPolicy.fromKnownHosts(path, 'sftp.partner.example', 22).verify(A).ok).toBe(true);
    expect(HostKeyPolicy.fromKnownHosts(path, 'evil.partner.example', 22).verify(A).ok).toBe(false);
  });

  it('calls a different key for a known host a change, naming both fingerprints', () => {
    const v = HostKeyPolicy.fromKnownHosts(knownHosts(line('sftp.example', A)), 'sftp.example', 22).verify(B);
    expect(v.ok).toBe(false);
    if (!v.ok) {
      expect(v.reason).toContain('has CHANGED');
      expect(v.reason).toContain(fingerprint(A));
      expect(v.reason).toContain(fingerprint(B));
    }
  });

  it('refuses an unknown host rather than trusting it on first use', () => {
    const v = HostKeyPolicy.fromKnownHosts(knownHosts(line('other.example', A)), 'sftp.example', 22).verify(A);
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.reason).toMatch(/is not in .*the server offered ssh-ed25519 key SHA256:/);
  });

  it('refuses a key marked @revoked even if it is also listed', () => {
    const path = knownHosts(line('sftp.example', A), line('sftp.example', A, '@revoked'));
    expect(HostKeyPolicy.fromKnownHosts(path, 'sftp.example', 22).verify(A).ok).toBe(false);
  });

  it('refuses DSA: a known_hosts line of type ssh-dss vouches for nothing, and a DSA key offered is refused by its type', () => {
    const dsa = Buffer.concat([Buffer.from([0, 0, 0, 7]), Buffer.from('ssh-dss'), Buffer.alloc(40, 3)]);
    const onlyDsa = HostKeyPolicy.fromKnownHosts(knownHosts(`[sftp.example]:2222 ssh-dss ${dsa.toString('base64')}`), 'sftp.example', 2222);
    expect(onlyDsa.knownTypes()).toEqual([]);
    expect(onlyDsa.verify(dsa)).toEqual({
      ok: false,
      reason: expect.stringMatching(/offered ssh-dss key .*DSA \(ssh-dss\) host keys are refused/),
    });
    expect(onlyDsa.verify(A)).toEqual({ ok: false, reason: expect.stringMatching(/has only a ssh-dss key for \[sftp\.example\]:2222/) });
  });

  it('checks a pinned fingerprint', () => {
    const policy = HostKeyPolicy.pinned(fingerprint(A), 'sftp.example', 22);
    expect(policy.verify(A).ok).toBe(true);
    expect(policy.verify(B).ok).toBe(false);
    expect(() => HostKeyPolicy.pinned('MD5:aa:bb', 'h', 22)).toThrow('SHA256');
  });
});

describe('sftp:// URLs', () => {
  it('parse user, host, port and path', () => {
    expect(parseSftpUrl('sftp://ingest@sftp.example:2222/in/settle')).toEqual({
      user: 'ingest',
      host: 'sftp.example',
      port: 2222,
      path: '/in/settle',
    });
    expect(parseSftpUrl('sftp://ingest@sftp.example/in/').port).toBe(22);
  });

  it.each(['sftp://sftp.example/in', 'sftp://u:secret@h/in', 'sftp://u@h/', 'sftp://u@h/in/../etc'])('refuses %s', (url) => {
    expect(() => parseSftpUrl(url)).toThrow();
  });
});
