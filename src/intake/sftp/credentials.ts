import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { UsageError, errorMessage } from '../../errors.js';

/** How a client logs in to an SFTP server: a key, an agent, a password (any of them). */
export interface SftpCredentials {
  keyPath?: string;
  keyPassphrase?: string;
  password?: string;
  agentSocket?: string;
}

/** Refuses settings that give no way to log in at all. */
export function refuseNoCredentials(creds: SftpCredentials): void {
  if (!creds.keyPath && !creds.agentSocket && !creds.password) {
    throw new UsageError('no SFTP credentials: set --sftp-key, run an ssh-agent (SSH_AUTH_SOCK), or set SETTLE_SFTP_PASSWORD');
  }
}

/** The private key file's bytes; a file that cannot be read is configuration (exit 2). */
export function readSftpKey(keyPath: string): Buffer {
  try {
    return readFileSync(keyPath);
  } catch (err) {
    throw new UsageError(`SFTP key ${keyPath} cannot be read: ${errorMessage(err)}`, { cause: err });
  }
}

/**
 * Everything about the credentials that is known without the server: one is given, the key
 * file is readable and is a key that its passphrase opens, and an agent that is the only way
 * in has its socket. Checked for every partner before the first one runs.
 */
export async function checkCredentials(creds: SftpCredentials): Promise<void> {
  refuseNoCredentials(creds);
  if (creds.keyPath) {
    const key = readSftpKey(creds.keyPath);
    // loaded on demand, as the SFTP intake is: ssh2 takes long to load for commands that never need
    // it (required: the bundle's chunks have no `import()` of their own, bin/codeCache.cjs)
    const ssh2 = createRequire(import.meta.url)('ssh2') as typeof import('ssh2');
    const parsed = ssh2.utils.parseKey(key, creds.keyPassphrase);
    if (parsed instanceof Error) {
      throw new UsageError(
        `SFTP key ${creds.keyPath} cannot be used: ${parsed.message} (SETTLE_SFTP_KEY_PASSPHRASE for a key with a passphrase)`,
      );
    }
  }
  if (creds.agentSocket && !creds.keyPath && !creds.password) {
    const socket = statSync(creds.agentSocket, { throwIfNoEntry: false });
    if (!socket?.isSocket())
      throw new UsageError(`SSH_AUTH_SOCK ${creds.agentSocket} is no ssh-agent socket: start the agent, or set --sftp-key`);
  }
}
