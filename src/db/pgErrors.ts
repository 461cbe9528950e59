/** PostgreSQL SQLSTATE codes this tool reacts to (see the PostgreSQL manual, appendix A). */
export const PG_UNIQUE_VIOLATION = '23505';
export const PG_FOREIGN_KEY_VIOLATION = '23503';
export const PG_NOT_NULL_VIOLATION = '23502';
export const PG_CHECK_VIOLATION = '23514';
export const PG_UNDEFINED_TABLE = '42P01';
export const PG_INVALID_CATALOG_NAME = '3D000';
export const PG_INVALID_PASSWORD = '28P01';
export const PG_INVALID_AUTHORIZATION = '28000';
export const PG_LOCK_NOT_AVAILABLE = '55P03';
export const PG_QUERY_CANCELED = '57014';
export const PG_INSUFFICIENT_PRIVILEGE = '42501';
/** class 08: connection exception */
export const PG_CONNECTION_EXCEPTION_CLASS = '08';
export const PG_ADMIN_SHUTDOWN = '57P01';
export const PG_CRASH_SHUTDOWN = '57P02';
export const PG_CANNOT_CONNECT_NOW = '57P03';
/** class 22: data exception */
export const PG_DATA_EXCEPTION_CLASS = '22';
/** class 23: integrity constraint violation */
export const PG_INTEGRITY_CONSTRAINT_CLASS = '23';

/** Class 22 (data exception) and 23 (integrity constraint) errors are the file's fault. */
export function isContentError(code: string | undefined): boolean {
  return code !== undefined && (code.startsWith(PG_DATA_EXCEPTION_CLASS) || code.startsWith(PG_INTEGRITY_CONSTRAINT_CLASS));
}

export function pgCode(err: unknown): string | undefined {
  if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'string') {
    return (err as { code: string }).code;
  }
  return undefined;
}
