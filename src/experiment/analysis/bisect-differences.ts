import { formatChanges } from '../../fingerprint/diff.js';
import type { Fingerprint, FingerprintChange } from '../../fingerprint/types.js';
import type { ServerConfig } from '../spec/types.js';

/**
 * The differences `servelab bisect` can set between two configurations of one server: environment variables and
 * server flags, each with its value in the reference (good) configuration and in the current (slow) one; undefined
 * means unset / absent, '' a flag without a value. Everything else that differs (packages, driver, GPUs, the
 * command's program) is listed as not settable: servelab cannot install a driver per variant. Pure.
 */
export interface SettableDifference {
  /** `NCCL_PROTO` for a variable, `--max-running-requests` for a flag: the name the answer and the fix use. */
  name: string;
  kind: 'env' | 'flag';
  reference?: string;
  current?: string;
}

export interface Differences {
  settable: SettableDifference[];
  /** Differences bisect cannot set, with why: listed in the plan and the answer. */
  fixed: Array<{ change: FingerprintChange; why: string }>;
}

const MARKER = /<redacted(:[0-9a-f]{12})?>/;

/**
 * What differs from `reference` to `current` among `changes` (configurationChanges of their fingerprints), split
 * into what a variant can set and what it cannot. Flags come from the two argv (fingerprints keep them exactly).
 */
export function bisectDifferences(changes: readonly FingerprintChange[], reference: Fingerprint, current: Fingerprint): Differences {
  const settable: SettableDifference[] = [];
  const fixed: Differences['fixed'] = [];
  for (const change of changes) {
    if (change.key === 'command') continue;
    if (!change.key.startsWith('env.')) {
      fixed.push({ change, why: notSettableWhy(change.key) });
      continue;
    }
    if (MARKER.test(change.before ?? '') || MARKER.test(change.after ?? '')) {
      fixed.push({ change, why: 'a secret: its value is not stored' });
      continue;
    }
    settable.push({
      name: change.key.slice('env.'.length),
      kind: 'env',
      ...(change.before !== undefined && { reference: change.before }),
      ...(change.after !== undefined && { current: change.after }),
    });
  }
  if (changes.some((change) => change.key === 'command')) {
    const flags = flagDifferences(reference.command, current.command);
    if (flags) settable.push(...flags);
    else {
      const change = changes.find((candidate) => candidate.key === 'command')!;
      fixed.push({ change, why: 'the program or its positional arguments differ, not only flags' });
    }
  }
  settable.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { settable, fixed };
}

function notSettableWhy(key: string): string {
  if (key.startsWith('packages.')) return 'a package version: install it, then measure again';
  if (/^gpus\.\d+\.driver$|^system\.cuda/.test(key)) return 'a driver or CUDA version';
  if (key === 'model') return 'the model served';
  return 'a fact of the machine';
}

interface ParsedCommand {
  /** The program and its arguments before the first flag. */
  head: string[];
  /** Each flag's values in order (a repeated flag has several); '' for a flag without a value. */
  flags: Map<string, string[]>;
}

/** `--name value`, `--name=value` and bare `--name`; a value never starts with `--`. */
function parseCommand(argv: readonly string[]): ParsedCommand {
  const first = argv.findIndex((arg) => arg.startsWith('--'));
  const head = first < 0 ? [...argv] : argv.slice(0, first);
  const flags = new Map<string, string[]>();
  for (let i = head.length; i < argv.length; i += 1) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) return { head, flags: new Map([['', [arg]]]) };
    const equals = arg.indexOf('=');
    const name = equals < 0 ? arg : arg.slice(0, equals);
    let value = equals < 0 ? '' : arg.slice(equals + 1);
    if (equals < 0 && i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) {
      value = argv[i + 1]!;
      i += 1;
    }
    flags.set(name, [...(flags.get(name) ?? []), value]);
  }
  return { head, flags };
}

/** Flag differences, or undefined when the commands differ in more than flags a variant can set one by one. */
function flagDifferences(reference: readonly string[], current: readonly string[]): SettableDifference[] | undefined {
  const a = parseCommand(reference);
  const b = parseCommand(current);
  if (a.head.join('\0') !== b.head.join('\0') || a.flags.has('') || b.flags.has('')) return undefined;
  const names = [...new Set([...a.flags.keys(), ...b.flags.keys()])];
  const differences: SettableDifference[] = [];
  for (const name of names) {
    const before = a.flags.get(name);
    const after = b.flags.get(name);
    if (JSON.stringify(before) === JSON.stringify(after)) continue;
    // A repeated flag's values are a list: which one to restore is ambiguous.
    if ((before?.length ?? 0) > 1 || (after?.length ?? 0) > 1) return undefined;
    if (MARKER.test(before?.[0] ?? '') || MARKER.test(after?.[0] ?? '')) return undefined;
    differences.push({ name, kind: 'flag', ...(before && { reference: before[0] }), ...(after && { current: after[0] }) });
  }
  return differences;
}

/**
 * `server` with every difference set to its current value except those in `restored`, set to the reference's: a
 * variant that does not depend on the shell it was started from (an unset value is an unsetEnv entry).
 */
export function withDifferences(server: ServerConfig, differences: readonly SettableDifference[], restored: ReadonlySet<string>): ServerConfig {
  const env = { ...server.env };
  const unset = new Set(server.unsetEnv);
  let command = [...server.command];
  for (const difference of differences) {
    const value = restored.has(difference.name) ? difference.reference : difference.current;
    if (difference.kind === 'env') {
      if (value === undefined) {
        delete env[difference.name];
        unset.add(difference.name);
      } else {
        env[difference.name] = value;
        unset.delete(difference.name);
      }
    } else command = withFlag(command, difference.name, value);
  }
  return { ...server, env, unsetEnv: [...unset], command };
}

/** argv with flag `name` set to `value` (undefined: removed; '': bare), in place when present, else appended. */
function withFlag(argv: readonly string[], name: string, value: string | undefined): string[] {
  const out: string[] = [];
  let placed = false;
  const write = (): void => {
    if (value === undefined || placed) return;
    out.push(name, ...(value === '' ? [] : [value]));
    placed = true;
  };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    if (arg === name || arg.startsWith(`${name}=`)) {
      if (arg === name && i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) i += 1;
      write();
      continue;
    }
    out.push(arg);
  }
  write();
  return out;
}

/** `NCCL_PROTO LL → (unset)` for a settable difference (the same words as the reference guard's list). */
export function formatDifference(difference: SettableDifference): string {
  return formatChanges([
    {
      key: difference.name,
      ...(difference.reference !== undefined && { before: difference.reference }),
      ...(difference.current !== undefined && { after: difference.current }),
    },
  ]);
}
