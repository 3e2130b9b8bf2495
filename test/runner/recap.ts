/**
 * node:test reporter that prints nothing while tests run and, at the end, one recap line per failing test: file,
 * test name (with its suites), first line of the error. `run.ts` writes it to a file and prints it after the main
 * reporter's summary, so a failure hundreds of lines up is named again at the bottom.
 */
import { relative } from 'node:path';

interface TestEvent {
  type: string;
  data: {
    name: string;
    nesting: number;
    file?: string;
    details?: { error?: unknown };
  };
}

interface Failure {
  file: string;
  test: string;
  error: string;
}

export default async function* recap(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const failures: Failure[] = [];
  let cancelled = 0;
  // Names of the tests being reported, by file and nesting: a failure is named with the suites around it.
  const open = new Map<string, string[]>();
  for await (const { type, data } of source) {
    const file = data.file ?? '';
    if (type === 'test:start') {
      const stack = open.get(file) ?? [];
      stack.length = data.nesting;
      stack.push(data.name);
      open.set(file, stack);
    }
    if (type !== 'test:fail') continue;
    const error = data.details?.error;
    // A suite fails because a test in it failed, a test is cancelled because its parent failed or timed out: the
    // test that failed is the one to name.
    const kind = errorField(error, 'failureType');
    if (kind === 'subtestsFailed') continue;
    if (kind === 'cancelledByParent') {
      cancelled += 1;
      continue;
    }
    const suites = (open.get(file) ?? []).slice(0, data.nesting);
    // node:test names a file that failed outside any test (it exited non-zero, it could not load) by its path.
    const test = data.name === file ? '(the file itself)' : [...suites, data.name].join(' › ');
    failures.push({ file: shortPath(file), test, error: firstLine(error) });
  }
  yield formatRecap(failures, cancelled);
}

function formatRecap(failures: Failure[], cancelled: number): string {
  if (failures.length === 0 && cancelled === 0) return 'recap: no failing tests\n';
  const lines = failures.map((failure) => `  ✖ ${failure.file || '(no file)'}: ${failure.test}\n      ${failure.error}`);
  const also = cancelled > 0 ? `  (and ${cancelled} cancelled with a parent that failed or timed out)\n` : '';
  return `recap: ${failures.length} failing test${failures.length === 1 ? '' : 's'}\n${lines.map((line) => `${line}\n`).join('')}${also}`;
}

/**
 * The first line of what failed: the assertion or error thrown in the test, not node:test's wrapper around it. An
 * assertion's first line ends in a colon ("Expected values to be strictly equal:"): the line after it says what.
 * A file whose process failed outside any test is named with its exit.
 */
function firstLine(error: unknown): string {
  const inner = errorField(error, 'cause') ?? error;
  const message =
    inner instanceof Error ? inner.message : typeof inner === 'object' && inner !== null && 'message' in inner ? String(inner.message) : String(inner);
  const lines = message.split('\n').filter((line) => line.trim() !== '');
  const first = lines[0] ?? '(no message)';
  const line = first.endsWith(':') && lines[1] !== undefined ? `${first} ${lines[1].trim()}` : first;
  const exitCode = errorField(error, 'exitCode');
  const signal = errorField(error, 'signal');
  if (typeof signal === 'string') return `${line} (killed by ${signal})`;
  return typeof exitCode === 'number' ? `${line} (exit code ${exitCode})` : line;
}

function shortPath(file: string): string {
  const path = relative(process.cwd(), file);
  return path.startsWith('..') ? file : path;
}

function errorField(error: unknown, field: string): unknown {
  return typeof error === 'object' && error !== null ? (error as Record<string, unknown>)[field] : undefined;
}
