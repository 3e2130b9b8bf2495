/**
 * A failure the user can act on: one line saying what went wrong, one saying what to do next.
 * The CLI prints these without a stack trace and exits with `exitCode`.
 */
export class UserError extends Error {
  readonly hint: string;
  readonly exitCode: number;

  constructor(message: string, hint: string, exitCode = 1) {
    super(message);
    this.name = 'UserError';
    this.hint = hint;
    this.exitCode = exitCode;
  }
}

export function isUserError(error: unknown): error is UserError {
  return error instanceof UserError;
}

/** Message of any thrown value, for wrapping low-level errors into a UserError. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    const causeCode = (error.cause as NodeJS.ErrnoException | undefined)?.code;
    const detail = code ?? causeCode;
    return detail && !error.message.includes(detail) ? `${error.message} (${detail})` : error.message;
  }
  return String(error);
}
