/**
 * Exit statuses are part of the command-line contract (docs/DESIGN.md):
 * 0 every ready file ended loaded, skipped or held; 1 something was rejected, failed or is
 * inconsistent; 2 bad usage or configuration, nothing touched.
 */
export const EXIT_OK = 0;
export const EXIT_PROBLEM = 1;
export const EXIT_USAGE = 2;
export type ExitStatus = typeof EXIT_OK | typeof EXIT_PROBLEM | typeof EXIT_USAGE;

/** The one error type that reaches the user: a one-line message and the exit status it means. */
export class SettleError extends Error {
  readonly exitStatus: ExitStatus;

  constructor(message: string, exitStatus: ExitStatus, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SettleError';
    this.exitStatus = exitStatus;
  }
}

/**
 * An error whose command already printed its `--json` object (a run's summary, say): the
 * command line still gives it its stderr line and exit status, and no second object.
 */
export class AnsweredError extends SettleError {
  constructor(err: SettleError) {
    super(err.message, err.exitStatus, { cause: err.cause ?? err });
    this.name = 'AnsweredError';
  }
}

/** Bad flags, bad config, pending migrations: refused before anything is touched. */
export class UsageError extends SettleError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, EXIT_USAGE, options);
    this.name = 'UsageError';
  }
}

/** A failure that is not the input's fault (database down, disk full): retry next run. */
export class TransientError extends SettleError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, EXIT_PROBLEM, options);
    this.name = 'TransientError';
  }
}

/** The file's content is bad: it is rejected whole. `line` is the file's own line number. */
export class RejectError extends SettleError {
  readonly line: number | undefined;
  readonly field: string | undefined;

  constructor(message: string, where: { line?: number; field?: string } = {}, options?: { cause?: unknown }) {
    super(message, EXIT_PROBLEM, options);
    this.name = 'RejectError';
    this.line = where.line;
    this.field = where.field;
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** The exit status an error means: its own for ours, 1 for anything unexpected. */
export function exitStatusOf(err: unknown): ExitStatus {
  return err instanceof SettleError ? err.exitStatus : EXIT_PROBLEM;
}
