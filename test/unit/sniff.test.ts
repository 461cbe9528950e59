import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sniff } from '../../src/delivery/sniff.js';

const dir = mkdtempSync(join(tmpdir(), 'settle-sniff-'));
const file = (name: string, bytes: Buffer | string) => {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
};

describe('what wraps a delivery, from its leading bytes', () => {
  it('recognises gzip, zip, armoured and binary OpenPGP', async () => {
    expect(await sniff(file('a', Buffer.from([0x1f, 0x8b, 0x08, 0x00])))).toBe('gzip');
    expect(await sniff(file('b', Buffer.from('PK\x03\x04rest', 'latin1')))).toBe('zip');
    expect(await sniff(file('c', '\n-----BEGIN PGP MESSAGE-----\n\nhQEMA...'))).toBe('pgp-armored');
    // gpg's own first packet: old format, tag 1 (a session key for a public key), two-octet length, version 3
    expect(await sniff(file('d', Buffer.from([0x85, 0x01, 0x8c, 0x03, 0xfd, 0xc0])))).toBe('pgp-binary');
  });

  it('reads a CSV as CSV, also one with a byte-order mark or a header that starts with a non-ASCII letter', async () => {
    expect(await sniff(file('e', 'settlement_date,transaction_id\n'))).toBeNull();
    expect(await sniff(file('f', '\uFEFFsettlement_date,transaction_id\n'))).toBeNull();
    // "É" is C3 89: the header of a new-format tag 3 packet, but "c" is no version of one
    expect(await sniff(file('g', 'Échéance;Montant\n'))).toBeNull();
    expect(await sniff(file('h', ''))).toBeNull();
  });
});
