import { z } from 'zod';
import { formsOf } from './issues.js';

/**
 * What a file reference needs to know of a zod schema: each key's type in words, whether it is required, its
 * default, and the description and example its schema carries (`.describe()` / `.meta({ description, examples })`).
 * A key that is optional in the schema (a variant's override, say) but defaulted downstream names that default with
 * `.meta({ default })`, written as a file would write it.
 * docs/experiment-file.md is rendered from this, so the reference cannot drift from what the loader accepts.
 */

export interface KeyDoc {
  key: string;
  type: string;
  required: boolean;
  /** The default, when the key has one (as a file would write it). */
  default?: unknown;
  /** A section whose keys carry their own defaults (its default holds parsed values, not what a file writes). */
  sectionDefault?: boolean;
  description?: string;
  example?: unknown;
}

interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  shape?: Record<string, z.ZodType>;
  entries?: Record<string, unknown>;
  values?: unknown[];
  defaultValue?: unknown;
  format?: string;
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The schema under its wrappers (optional, default, pipe, a hand-validating transform's forms…). */
export function bare(schema: z.ZodType): z.ZodType {
  for (let guard = 0; guard < 20; guard++) {
    const forms = formsOf(schema);
    const def = defOf(schema);
    const next = forms ?? (def.type === 'pipe' ? def.in : def.innerType);
    if (!next) return schema;
    schema = next;
  }
  return schema;
}

/** The keys of an object schema (undefined when `schema` is no object under its wrappers). */
export function shapeOf(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  const def = defOf(bare(schema));
  return def.type === 'object' ? def.shape : undefined;
}

/** The forms of a union (each kind of a workload, executor, prompt source); the schema itself otherwise. */
export function optionsOf(schema: z.ZodType): z.ZodType[] {
  const def = defOf(bare(schema));
  return def.type === 'union' ? (def.options ?? []).flatMap(optionsOf) : [bare(schema)];
}

/** The schema of each entry of a list or mapping-of-name (a grid entry, a variant). */
export function entryOf(schema: z.ZodType): z.ZodType {
  const def = defOf(bare(schema));
  const entry = def.type === 'array' ? def.element : def.type === 'record' ? def.valueType : undefined;
  if (!entry) throw new Error(`not a list or mapping of entries: ${def.type}`);
  return entry;
}

/** The `kind` values an object form stands for. */
export function kindsOf(schema: z.ZodType): string[] {
  const kind = shapeOf(schema)?.kind;
  if (!kind) return [];
  const def = defOf(bare(kind));
  return (def.values ?? Object.values(def.entries ?? {})).map(String);
}

export function describeKeys(schema: z.ZodType): KeyDoc[] {
  return Object.entries(shapeOf(schema) ?? {}).map(([key, child]) => describeKey(key, child));
}

function describeKey(key: string, schema: z.ZodType): KeyDoc {
  let required = true;
  let defaultValue: unknown;
  let hasDefault = false;
  let meta: { description?: string; examples?: unknown[]; default?: unknown } = {};
  for (let node: z.ZodType | undefined = schema, guard = 0; node && guard < 20; guard++) {
    meta = { ...(z.globalRegistry.get(node) as typeof meta | undefined), ...meta };
    const def = defOf(node);
    if (def.type === 'optional' || def.type === 'nullable') required = false;
    if ((def.type === 'default' || def.type === 'prefault') && !hasDefault) {
      hasDefault = true;
      required = false;
      defaultValue = def.defaultValue;
    }
    node = formsOf(node) ?? (def.type === 'pipe' ? def.in : def.innerType);
  }
  if (!hasDefault && meta.default !== undefined) {
    hasDefault = true;
    defaultValue = meta.default;
  }
  const type = typeText(schema);
  const section = hasDefault && defOf(bare(schema)).type === 'object';
  return {
    key,
    type,
    required,
    ...(section && { sectionDefault: true }),
    // A duration's default is held in ms; a file writes "30m" (a bare number would be seconds).
    ...(hasDefault && !section && { default: type === 'duration' && typeof defaultValue === 'number' ? durationText(defaultValue) : defaultValue }),
    ...(meta.description !== undefined && { description: meta.description }),
    ...(meta.examples?.[0] !== undefined && { example: meta.examples[0] }),
  };
}

/** A title given with `.meta({ title })` on the schema or a wrapper of it (e.g. "duration"). */
function titleOf(schema: z.ZodType): string | undefined {
  for (let node: z.ZodType | undefined = schema, guard = 0; node && guard < 20; guard++) {
    const title = (z.globalRegistry.get(node) as { title?: string } | undefined)?.title;
    if (title) return title;
    const def = defOf(node);
    node = def.type === 'optional' || def.type === 'nullable' || def.type === 'default' || def.type === 'prefault' ? def.innerType : undefined;
  }
  return undefined;
}

/** A type in the words of a file's author: "integer", "list of string", "mapping of name → string". */
export function typeText(schema: z.ZodType): string {
  const title = titleOf(schema);
  if (title) return title;
  const node = bare(schema);
  const def = defOf(node);
  switch (def.type) {
    case 'string':
      return 'string';
    case 'number':
      return def.format?.includes('int') || (node as z.ZodNumber).isInt ? 'integer' : 'number';
    case 'boolean':
      return 'true/false';
    case 'literal':
      return (def.values ?? []).map((value) => JSON.stringify(value)).join(' | ');
    case 'enum':
      return Object.values(def.entries ?? {})
        .map((value) => JSON.stringify(value))
        .join(' | ');
    case 'array':
      return `list of ${typeText(def.element!)}`;
    case 'record':
      return `mapping of ${(def.keyType && titleOf(def.keyType)) ?? 'name'} → ${typeText(def.valueType!)}`;
    case 'object':
      return kindsOf(node).length > 0 ? `mapping (kind ${kindsOf(node).join(', ')})` : 'mapping';
    case 'union': {
      // Forms told apart by `kind` read as one mapping: "mapping (kind local, ssh, slurm)".
      const kinds = (def.options ?? []).map(kindsOf);
      if (kinds.every((each) => each.length > 0)) return `mapping (kind ${kinds.flat().join(', ')})`;
      return [...new Set((def.options ?? []).map(typeText))].join(' or ');
    }
    default:
      return def.type;
  }
}

function durationText(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
