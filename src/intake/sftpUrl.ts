import { UsageError } from '../errors.js';

export interface SftpLocation {
  user: string;
  host: string;
  port: number;
  /** an absolute path on the server */
  path: string;
}

/** `sftp://user@host[:port]/path`; a password in the URL is refused (it would sit in cron and ps). */
export function parseSftpUrl(value: string): SftpLocation {
  // URL parsing would quietly resolve `..`; an intake path that uses it is refused instead
  if (/\/\.\.(\/|$)/.test(value)) throw new UsageError(`intake ${value} must not contain ".."`);
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new UsageError(`intake ${JSON.stringify(value)} is not a valid sftp:// URL`);
  }
  if (u.protocol !== 'sftp:') throw new UsageError(`intake ${value} must start with sftp://`);
  if (u.password) throw new UsageError('an sftp:// URL must not carry a password: use SETTLE_SFTP_PASSWORD or a key');
  if (!u.username) throw new UsageError(`intake ${value} must name the user: sftp://user@host/path`);
  const path = decodeURIComponent(u.pathname);
  if (!path || path === '/') throw new UsageError(`intake ${value} must name the folder on the server`);
  return {
    user: decodeURIComponent(u.username),
    host: u.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: u.port ? Number(u.port) : 22,
    path: path.replace(/\/+$/, ''),
  };
}
