import { Option, type Command } from 'commander';
import { DEFAULTS } from '../config/settings.js';

/** The record-size limit: every command that reads settlement files (run, adopt, check). */
export function withRecordLimitOption(cmd: Command): Command {
  return cmd.option(
    '--max-record-bytes <bytes>',
    `a file with a longer record is rejected (env SETTLE_MAX_RECORD_BYTES; default ${DEFAULTS.maxRecordBytes})`,
  );
}

/** Options that every command reading the configuration accepts. */
export function withConfigOptions(cmd: Command): Command {
  const head = cmd
    .option('--config <path>', 'JSON config file (env SETTLE_CONFIG); flags and environment override it')
    .option(
      '--ledger <path|url>',
      `ledger: a SQLite file, or postgres://… shared by several hosts (env SETTLE_LEDGER; default ${DEFAULTS.ledger})`,
    )
    .option(
      '--ledger-timeout <seconds>',
      `how long to wait for another process's ledger write (env SETTLE_LEDGER_TIMEOUT; default ${DEFAULTS.ledgerTimeout})`,
    );
  return withRecordLimitOption(head)
    .option('--database-url <url>', 'finance PostgreSQL URL (env DATABASE_URL)')
    .option(
      '--db-timeout <seconds>',
      `longest wait on the finance database: connecting, a lock, a statement (env SETTLE_DB_TIMEOUT; default ${DEFAULTS.dbTimeout})`,
    )
    .option('--schema <name>', `finance schema (env SETTLE_SCHEMA; default ${DEFAULTS.schema})`)
    .option('--log-file <path>', 'append JSON logs here instead of stderr (env SETTLE_LOG_FILE)')
    .addOption(
      new Option('--log-level <level>', `log level (env SETTLE_LOG_LEVEL; default ${DEFAULTS.logLevel})`).choices([
        'fatal',
        'error',
        'warn',
        'info',
        'debug',
        'trace',
        'silent',
      ]),
    );
}

/** The folder options: `run`, and later `audit`, `adopt` and reprocessing. */
export function withFolderOptions(cmd: Command): Command {
  return cmd
    .option('--intake <dir|url>', 'intake folder, or sftp://user@host[:port]/path (env SETTLE_INTAKE)')
    .option('--archive <dir>', 'where loaded files go (default: "archive" beside the intake)')
    .option('--duplicates <dir>', 'where skipped duplicates go (default: "duplicates" beside the intake)')
    .option('--rejected <dir>', 'where rejected files go (default: "rejected" beside the intake)')
    .option('--pattern <glob>', `file names to take (env SETTLE_PATTERN; default ${DEFAULTS.pattern})`);
}

/** gzip, zip and OpenPGP deliveries: every command that reads settlement files (run, check). */
export function withDecodeOptions(cmd: Command): Command {
  return cmd
    .option(
      '--pgp-key <path>',
      'armoured private key that decrypts OpenPGP deliveries (env SETTLE_PGP_KEY; passphrase from SETTLE_PGP_PASSPHRASE or the config file)',
    )
    .option(
      '--pgp-verify-key <path>',
      "the partner's public key: every delivery must carry its valid signature (env SETTLE_PGP_VERIFY_KEY)",
    )
    .option(
      '--max-inflate-ratio <n>',
      `a compressed delivery that inflates more than n:1 is rejected (env SETTLE_MAX_INFLATE_RATIO; default ${DEFAULTS.maxInflateRatio})`,
    )
    .option(
      '--max-decoded-bytes <bytes>',
      `a delivery whose content is larger is rejected (env SETTLE_MAX_DECODED_BYTES; default ${DEFAULTS.maxDecodedBytes})`,
    );
}

/** How to reach and trust an sftp:// intake: `run`, `audit`. */
export function withSftpOptions(cmd: Command): Command {
  return cmd
    .option('--sftp-key <path>', 'private key for an sftp:// intake (env SETTLE_SFTP_KEY; passphrase from SETTLE_SFTP_KEY_PASSPHRASE)')
    .option('--known-hosts <path>', 'OpenSSH known_hosts for the SFTP server (env SETTLE_KNOWN_HOSTS; default ~/.ssh/known_hosts)')
    .option('--host-key-fingerprint <SHA256:...>', 'pin the SFTP server key instead of known_hosts (env SETTLE_HOST_KEY_FINGERPRINT)');
}
