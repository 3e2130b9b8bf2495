import type { z } from 'zod';
import { valueAt } from '../util/value-at.js';

/**
 * zod's validation issues in the words of the file's author: which key (an unknown one at its own path, with a
 * did-you-mean), what was expected in plain terms ("a mapping of name → value", not "record"), and for a union
 * the error of the form the author meant (picked by `kind`) instead of "Invalid input".
 */

type Key = string | number;

export interface Problem {
  /** Key path of the offending value; for an unknown key, the path of that key itself. */
  path: Key[];
  /** The offending thing is a key (unknown key): point at the key, not at its value. */
  isKey: boolean;
  message: string;
  /** An unknown key's guess (did you mean …): the missing key it stands for, which is then not reported again. */
  explains?: Key[];
}

const EXPECTED: Record<string, string> = {
  record: 'a mapping of name → value',
  object: 'a mapping of keys',
  map: 'a mapping of keys',
  array: 'a list',
  tuple: 'a list',
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  null: 'nothing (null)',
};

const RENAMED = new WeakMap<object, Readonly<Record<string, string>>>();

/**
 * Mark old names of an object schema's keys (old → new): a file still using one is told the new name, at the old
 * key's line, instead of "unknown key". The schema itself is returned, so this wraps its definition.
 */
export function renamedKeys<Schema extends z.ZodType>(schema: Schema, renamed: Readonly<Record<string, string>>): Schema {
  RENAMED.set(schema, renamed);
  return schema;
}

const FORMS = new WeakMap<object, z.ZodType>();

/**
 * Mark a schema that validates by hand (a `z.unknown().transform`, for errors of the form the author meant) with
 * the schema of the forms it accepts, so an unknown key inside it is listed with the keys allowed there, and the
 * file reference (docs/experiment-file.md) can describe it. The schema itself is returned.
 */
export function acceptsFormsOf<Schema extends z.ZodType>(schema: Schema, forms: z.ZodType): Schema {
  FORMS.set(schema, forms);
  return schema;
}

/** The forms a hand-validating schema accepts (see acceptsFormsOf). */
export function formsOf(schema: object): z.ZodType | undefined {
  return FORMS.get(schema);
}

/**
 * Every issue worth showing, described, unknown keys first (one problem per key): they usually explain a "missing"
 * key, which is then left out (`trails` unknown, did you mean `trials`, is one mistake, not two).
 */
export function describeIssues(schema: z.ZodType, input: unknown, issues: readonly z.core.$ZodIssue[]): Problem[] {
  const flat = issues.flatMap((issue) => flatten(issue, [], input));
  const unknown = flat.flatMap((entry) =>
    entry.issue.code === 'unrecognized_keys' ? entry.issue.keys.map((key) => ({ ...entry, issue: { ...entry.issue, keys: [key] } })) : [],
  );
  const problems = [...unknown, ...flat.filter((entry) => entry.issue.code !== 'unrecognized_keys')].map((entry) =>
    describe(schema, input, entry.issue, entry.prefix, flat),
  );
  const explained = new Set(problems.flatMap((problem) => (problem.explains ? [JSON.stringify(problem.explains)] : [])));
  const seen = new Set<string>();
  return problems.filter((problem) => {
    const id = JSON.stringify([problem.path, problem.message]);
    if (seen.has(id) || (!problem.isKey && explained.has(JSON.stringify(problem.path)))) return false;
    seen.add(id);
    return true;
  });
}

interface Located {
  issue: z.core.$ZodIssue;
  /** Path of the union the issue came from, which the issue's own path is relative to. */
  prefix: Key[];
}

/** Replace each failed union by the issues of the branch the author meant. */
function flatten(issue: z.core.$ZodIssue, prefix: Key[], root: unknown): Located[] {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return [{ issue, prefix }];
  const at = [...prefix, ...keysOf(issue.path)];
  const branch = meantBranch(issue.errors);
  if (!branch) return [{ issue, prefix }];
  return branch.flatMap((inner) => flatten(inner, at, root));
}

/**
 * The branch written for this value: one that does not reject its `kind` or its type, preferring the fewest
 * issues. Undefined when every branch rejects the form itself.
 */
function meantBranch(branches: readonly z.core.$ZodIssue[][]): z.core.$ZodIssue[] | undefined {
  const candidates = branches.filter((issues) => !rejectsForm(issues));
  if (candidates.length === 0) return undefined;
  return [...candidates].sort((a, b) => a.length - b.length)[0];
}

/** The branch is for another form: it rejects the value's type or its `kind`, or is a union all of whose forms do. */
function rejectsForm(issues: readonly z.core.$ZodIssue[]): boolean {
  return issues.some(
    (issue) =>
      (issue.path.length === 0 && issue.code === 'invalid_type') ||
      (issue.path.length === 1 && issue.path[0] === 'kind') ||
      (issue.path.length === 0 && issue.code === 'invalid_union' && issue.errors.every(rejectsForm)),
  );
}

function describe(schema: z.ZodType, root: unknown, issue: z.core.$ZodIssue, prefix: Key[], all: Located[]): Problem {
  const path = [...prefix, ...keysOf(issue.path)];
  const value = valueAt(root, path);
  switch (issue.code) {
    case 'unrecognized_keys': {
      const key = issue.keys[0]!;
      const objectNode = objectAt(schema, root, path);
      const known = objectNode ? Object.keys(objectNode._zod.def.shape!) : [];
      const renamed = objectNode && RENAMED.get(objectNode)?.[key];
      if (renamed) return { path: [...path, key], isKey: true, message: `"${key}" is now called "${renamed}"; rename it` };
      const missing = all
        .filter((entry) => entry.issue.code === 'invalid_type' && valueAt(root, [...entry.prefix, ...keysOf(entry.issue.path)]) === undefined)
        .map((entry) => [...entry.prefix, ...keysOf(entry.issue.path)])
        .filter((other) => other.length === path.length + 1 && sameStart(other, path))
        .map((other) => String(other.at(-1)));
      const candidates = [...new Set([...missing, ...known])];
      const guess = closest(key, candidates);
      const suggestion = guess ? ` (did you mean "${guess}"?)` : '';
      const listing = known.length > 0 ? `; keys allowed here: ${known.join(', ')}` : '';
      return {
        path: [...path, key],
        isKey: true,
        message: `unknown key "${key}"${suggestion}${listing}`,
        ...(guess && missing.includes(guess) && { explains: [...path, guess] }),
      };
    }
    case 'invalid_type': {
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      if (value === undefined && path.length > 0) {
        return { path, isKey: false, message: `missing key "${String(path.at(-1))}" (expected ${expected})` };
      }
      return { path, isKey: false, message: `expected ${expected}, got ${describeValue(value)}` };
    }
    case 'invalid_value':
      return { path, isKey: false, message: `expected one of ${issue.values.map((option) => JSON.stringify(option)).join(', ')}, got ${describeValue(value)}` };
    case 'too_small':
    case 'too_big': {
      const bound = issue.code === 'too_small' ? (issue.inclusive ? 'at least' : 'more than') : issue.inclusive ? 'at most' : 'less than';
      const what =
        issue.origin === 'array' || issue.origin === 'set'
          ? ` ${issue.origin === 'array' ? 'entries' : 'items'}`
          : issue.origin === 'string'
            ? ' characters'
            : '';
      return {
        path,
        isKey: false,
        message: `expected ${bound} ${String(issue.code === 'too_small' ? issue.minimum : issue.maximum)}${what}, got ${describeValue(value)}`,
      };
    }
    case 'invalid_union':
      return { path, isKey: false, message: `${describeValue(value)} matches none of the accepted forms` };
    default:
      return { path, isKey: false, message: issue.message.replace(/^Invalid input: /, '') };
  }
}

function keysOf(path: readonly PropertyKey[]): Key[] {
  return path.filter((part): part is Key => typeof part !== 'symbol');
}

function sameStart(path: readonly Key[], start: readonly Key[]): boolean {
  return start.every((part, index) => path[index] === part);
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'an empty value';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return String(value);
}

/** The object schema of the mapping at `path` (the branch matching its `kind` for unions); undefined when unknown. */
function objectAt(schema: z.ZodType, root: unknown, path: readonly Key[]): SchemaNode | undefined {
  let node: SchemaNode | undefined = schema as unknown as SchemaNode;
  for (let depth = 0; depth <= path.length && node; depth++) {
    const objectNode = resolveObject(node, valueAt(root, path.slice(0, depth)));
    if (depth === path.length) return objectNode;
    node = child(objectNode ?? unwrap(node, valueAt(root, path.slice(0, depth))), path[depth]!);
  }
  return undefined;
}

/** The parts of zod's (v4) schema definitions this walk reads. */
interface SchemaNode {
  _zod: {
    def: {
      type: string;
      shape?: Record<string, SchemaNode>;
      innerType?: SchemaNode;
      in?: SchemaNode;
      element?: SchemaNode;
      valueType?: SchemaNode;
      options?: SchemaNode[];
      getter?: () => SchemaNode;
    };
  };
}

/** Strip wrappers (optional, default, pipe, lazy…) and pick the union option that fits `value`. */
function unwrap(node: SchemaNode, value: unknown): SchemaNode | undefined {
  for (let guard = 0; guard < 20; guard++) {
    const def = node._zod.def;
    const forms = FORMS.get(node) as SchemaNode | undefined;
    const next = forms
      ? forms
      : def.type === 'pipe'
        ? def.in
        : def.type === 'lazy'
          ? def.getter?.()
          : def.type === 'union'
            ? pickOption(def.options ?? [], value)
            : (def.innerType ?? undefined);
    if (!next) return node;
    node = next;
  }
  return node;
}

function resolveObject(node: SchemaNode, value: unknown): SchemaNode | undefined {
  const bare = unwrap(node, value);
  return bare?._zod.def.type === 'object' ? bare : undefined;
}

function pickOption(options: SchemaNode[], value: unknown): SchemaNode | undefined {
  const objects = options.map((option) => unwrap(option, value)).filter((option): option is SchemaNode => option?._zod.def.type === 'object');
  const kind = isMapping(value) ? value.kind : undefined;
  const byKind = objects.find((option) => {
    // A literal lists its values; an enum (several kinds sharing one shape) its entries.
    const def = option._zod.def.shape?.kind?._zod.def as { values?: unknown[]; entries?: Record<string, unknown> } | undefined;
    return (def?.values ?? Object.values(def?.entries ?? {})).includes(kind);
  });
  return byKind ?? (objects.length === 1 ? objects[0] : undefined);
}

function child(node: SchemaNode | undefined, key: Key): SchemaNode | undefined {
  if (!node) return undefined;
  const def = node._zod.def;
  if (def.type === 'object') return def.shape?.[String(key)];
  if (def.type === 'array') return def.element;
  if (def.type === 'record') return def.valueType;
  return undefined;
}

/** The candidate within edit distance 2 (or a third of the word), if one is clearly closest. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

/** Damerau–Levenshtein (optimal string alignment): a swapped pair of letters ("trails" → "trials") costs 1. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = value;
    }
  }
  return rows[a.length]![b.length]!;
}
