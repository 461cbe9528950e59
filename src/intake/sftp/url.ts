import { UsageError } from '../../errors.js';

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
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`intake ${JSON.stringify(value)} is not a valid sftp:// URL`);
  }
  if (url.protocol !== 'sftp:') throw new UsageError(`intake ${value} must start with sftp://`);
  if (url.password) throw new UsageError('an sftp:// URL must not carry a password: use SETTLE_SFTP_PASSWORD or a key');
  if (!url.username) throw new UsageError(`intake ${value} must name the user: sftp://user@host/path`);
  const path = decodeURIComponent(url.pathname);
  if (!path || path === '/') throw new UsageError(`intake ${value} must name the folder on the server`);
  return {
    user: decodeURIComponent(url.username),
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : 22,
    path: path.replace(/\/+$/, ''),
  };
}
