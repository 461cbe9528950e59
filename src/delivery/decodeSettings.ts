import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type * as openpgp from 'openpgp';
import { UsageError, errorMessage } from '../errors.js';

/** What the configuration says about deliveries that are not plain CSV. */
export interface DecodeSettings {
  /** the armoured private key that decrypts (`--pgp-key`) */
  pgpKeyPath: string | undefined;
  /** the partner's public key whose signature every delivery must carry (`--pgp-verify-key`) */
  pgpVerifyKeyPath: string | undefined;
  /** only from SETTLE_PGP_PASSPHRASE or the config file, never a flag */
  pgpPassphrase: string | undefined;
  /** decoded bytes per delivered byte, at most */
  maxInflateRatio: number;
  /** decoded bytes of one file, at most */
  maxDecodedBytes: number;
}

/** The settings with their keys read and unlocked: what decoding a file needs. */
export interface DecodeOptions {
  decryptionKey: openpgp.PrivateKey | undefined;
  verificationKey: openpgp.PublicKey | undefined;
  maxInflateRatio: number;
  maxDecodedBytes: number;
  /** a zip with several members takes the one member whose name this matches */
  memberPattern: RegExp | undefined;
}

export const fingerprintOf = (key: openpgp.PublicKey | openpgp.PrivateKey) => key.getFingerprint().toUpperCase();

async function armoured(path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`${flag} ${path} cannot be read: ${errorMessage(err)}`, { cause: err });
  }
}

/**
 * Reads and unlocks the keys once, before a run records anything: a missing file, a key that
 * is not one, or a wrong passphrase is configuration (exit 2), never a file's reject.
 */
export async function loadDecodeOptions(decodeSettings: DecodeSettings, memberPattern?: RegExp): Promise<DecodeOptions> {
  // loaded only when a key is configured: the OpenPGP library alone takes a good part of an idle run;
  // required, not imported, so that this and the decoder (pgpLayer.ts) share one copy of it in the
  // CommonJS bundle, whose chunks bin/codeCache.cjs compiles without an `import()` of their own
  const pgp =
    decodeSettings.pgpKeyPath !== undefined || decodeSettings.pgpVerifyKeyPath !== undefined
      ? (createRequire(import.meta.url)('openpgp') as typeof openpgp)
      : undefined;
  let decryptionKey: openpgp.PrivateKey | undefined;
  let verificationKey: openpgp.PublicKey | undefined;
  if (decodeSettings.pgpKeyPath !== undefined) {
    const text = await armoured(decodeSettings.pgpKeyPath, '--pgp-key');
    try {
      decryptionKey = await pgp!.readPrivateKey({ armoredKey: text });
    } catch (err) {
      throw new UsageError(`--pgp-key ${decodeSettings.pgpKeyPath} is not an armoured OpenPGP private key: ${errorMessage(err)}`, {
        cause: err,
      });
    }
    if (!decryptionKey.isDecrypted()) {
      if (decodeSettings.pgpPassphrase === undefined) {
        throw new UsageError(
          `--pgp-key ${decodeSettings.pgpKeyPath} is protected: set SETTLE_PGP_PASSPHRASE or "pgpPassphrase" in the config file`,
        );
      }
      try {
        decryptionKey = await pgp!.decryptKey({ privateKey: decryptionKey, passphrase: decodeSettings.pgpPassphrase });
      } catch (err) {
        // the library's message never quotes the passphrase; ours does not either
        throw new UsageError(`--pgp-key ${decodeSettings.pgpKeyPath} cannot be unlocked with the configured passphrase`, { cause: err });
      }
    }
  }
  if (decodeSettings.pgpVerifyKeyPath !== undefined) {
    const text = await armoured(decodeSettings.pgpVerifyKeyPath, '--pgp-verify-key');
    try {
      // a partner may hand over its whole key export: only the public part is kept
      verificationKey = (await pgp!.readKey({ armoredKey: text })).toPublic();
    } catch (err) {
      throw new UsageError(`--pgp-verify-key ${decodeSettings.pgpVerifyKeyPath} is not an armoured OpenPGP key: ${errorMessage(err)}`, {
        cause: err,
      });
    }
  }
  return {
    decryptionKey,
    verificationKey,
    maxInflateRatio: decodeSettings.maxInflateRatio,
    maxDecodedBytes: decodeSettings.maxDecodedBytes,
    memberPattern,
  };
}
