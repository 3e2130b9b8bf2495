import { readFileSync } from 'node:fs';
import { redactor } from './redact.js';

/** What tells one process from a later one that reuses its pid: start time and command line. */
export interface ProcessIdentity {
  /** Start time in clock ticks since boot (/proc/PID/stat field 22). */
  start: string;
  /** argv joined by spaces, secrets redacted (it is stored; equal secrets give equal markers). */
  cmdline: string;
}

/** Identity of a live process on Linux; undefined when it is gone or the OS has no /proc. */
export function processIdentity(pid: number): ProcessIdentity | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may itself contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = fields[19];
    if (start === undefined) return undefined;
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '').split('\0');
    const cmdline = redactor().args(argv).join(' ');
    return { start, cmdline };
  } catch {
    return undefined;
  }
}

/** Whether `pid` is still the very process recorded as `expected`. */
export function sameProcess(pid: number, expected: ProcessIdentity): boolean {
  const current = processIdentity(pid);
  return current !== undefined && current.start === expected.start && sameCommandLine(current.cmdline, expected.cmdline);
}

/**
 * The stored line was redacted with the run's `fingerprint.redact` names too; a process that reads it back may not
 * know them (or know more), so a marker in either line stands for whatever the other has there.
 */
function sameCommandLine(current: string, stored: string): boolean {
  if (current === stored) return true;
  const pattern = (line: string): RegExp =>
    new RegExp(
      `^${line
        .split(ANY_MARKER)
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*?')}$`,
      's',
    );
  return pattern(stored).test(current) || pattern(current).test(stored);
}

const ANY_MARKER = /<redacted(?::[0-9a-f]{12})?>/;

/** Whether the process exists (EPERM: it exists but belongs to someone else). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
