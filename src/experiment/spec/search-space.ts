import { type Knob, type KnobValue, pointKey, type SearchPoint, type SearchSpace } from '../search/types.js';
import { parseKnobConstraint } from './knob-expr.js';
import type { KnobSpec, SearchSpec } from './search-schema.js';
import { METRIC_NAMES, type MetricName, type ResolvedSearch, type TieBreakEntry } from './types.js';

/** More candidate points than this is a space no search here should enumerate (a typo in a range, most likely). */
export const MAX_SEARCH_POINTS = 20_000;

/** One valid point of a search as a variant is made of it: its name, knob values and the args/env it fills. */
export interface SearchPointSpec {
  name: string;
  params: Record<string, KnobValue>;
  args?: string[];
  env?: Record<string, string>;
  unsetEnv?: string[];
}

/**
 * The `search:` section resolved: knobs discretised, every combination enumerated, the constraints applied (an
 * invalid point never becomes a variant), the tie-break read. `fail` throws a located error.
 */
export function resolveSearch(spec: SearchSpec, fail: (key: string, message: string) => never): { search: ResolvedSearch; points: SearchPointSpec[] } {
  const knobs: Knob[] = Object.entries(spec.knobs).map(([name, knob]) => discretise(name, knob, fail));
  const names = knobs.map((knob) => knob.name);
  const template = spec.name ?? names.map((name) => `${name}{${name}}`).join('-');
  for (const name of names) {
    if (spec.name !== undefined && !spec.name.includes(`{${name}}`)) fail('search.name', `must contain {${name}} so every point gets its own name`);
    const used = [...(spec.args ?? []), ...Object.values(spec.env ?? {})].some((text) => text.includes(`{${name}}`));
    if (!used) fail(`search.knobs.${name}`, `fills no {${name}} in search.args or search.env, so its values would all start the same server`);
  }
  const total = knobs.reduce((product, knob) => product * knob.values.length, 1);
  if (total > MAX_SEARCH_POINTS) fail('search.knobs', `${total} combinations; at most ${MAX_SEARCH_POINTS}: use fewer values (step, count)`);

  const numeric = knobs.filter((knob) => knob.numeric).map((knob) => knob.name);
  const named = knobs.filter((knob) => !knob.numeric).map((knob) => knob.name);
  const tests = spec.constraints.map((text, index) => {
    const parsed = parseKnobConstraint(text, numeric, named);
    if (!parsed.ok) return fail(`search.constraints[${index}]`, `"${text}": ${parsed.message}`);
    return parsed.holds;
  });
  let combinations: Array<Record<string, KnobValue>> = [{}];
  for (const knob of knobs) combinations = combinations.flatMap((point) => knob.values.map((value) => ({ ...point, [knob.name]: value })));
  const valid = combinations.filter((point) => tests.every((test) => test(point)));
  if (valid.length === 0) fail('search.constraints', `no point of the ${total} meets every constraint`);

  const points = valid.map((params): SearchPointSpec => {
    const fill = (text: string): string => names.reduce((out, name) => out.replaceAll(`{${name}}`, String(params[name])), text);
    return {
      name: fill(template),
      params,
      ...(spec.args && { args: spec.args.map(fill) }),
      ...(spec.env && { env: Object.fromEntries(Object.entries(spec.env).map(([key, value]) => [key, fill(value)])) }),
      ...(spec.unsetEnv && { unsetEnv: spec.unsetEnv }),
    };
  });
  const search: ResolvedSearch = {
    knobs,
    combinations: total,
    constraints: spec.constraints,
    tolerance: spec.tolerance,
    confidence: spec.confidence,
    trialsPerStart: spec.trialsPerStart,
    tieBreak: spec.tieBreak.map((entry, index) => tieBreakEntry(entry, names, (message) => fail(`search.tieBreak[${index}]`, message))),
    ...(spec.budget && {
      budget: {
        gpusPerServer: spec.budget.gpusPerServer,
        ...(spec.budget.gpuHours !== undefined && { gpuHours: spec.budget.gpuHours }),
        ...(spec.budget.wallTime !== undefined && { wallTimeMs: spec.budget.wallTime }),
      },
    }),
  };
  return { search, points };
}

/** A knob's list of values: a list as written, a range discretised (whole numbers stay whole). */
function discretise(name: string, knob: KnobSpec, fail: (key: string, message: string) => never): Knob {
  if (Array.isArray(knob)) {
    if (new Set(knob).size !== knob.length) fail(`search.knobs.${name}`, 'lists a value twice');
    const numeric = knob.every((value) => typeof value === 'number');
    return { name, values: numeric ? [...knob].sort((a, b) => Number(a) - Number(b)) : knob, numeric, log: false };
  }
  const whole = Number.isInteger(knob.min) && Number.isInteger(knob.max) && (knob.step === undefined || Number.isInteger(knob.step));
  let values: number[];
  if (knob.count !== undefined) {
    const count = knob.count;
    values = Array.from({ length: count }, (_, i) =>
      knob.log ? knob.min * (knob.max / knob.min) ** (i / (count - 1)) : knob.min + ((knob.max - knob.min) * i) / (count - 1),
    );
    values = whole ? [...new Set(values.map(Math.round))] : values.map((value) => Number(value.toPrecision(6)));
  } else {
    if (!whole && knob.step === undefined) fail(`search.knobs.${name}`, 'a range of real numbers needs a step or a count');
    const step = knob.step ?? 1;
    values = [];
    // Rounded to the step's precision so 0.1 steps do not drift into 0.30000000000000004.
    for (let i = 0; knob.min + i * step <= knob.max + step * 1e-9; i += 1) values.push(Number((knob.min + i * step).toPrecision(12)));
  }
  if (values.length > MAX_SEARCH_POINTS) fail(`search.knobs.${name}`, `${values.length} values; use a larger step or a count`);
  return { name, values, numeric: true, log: knob.log ?? false };
}

function tieBreakEntry(text: string, knobs: readonly string[], fail: (message: string) => never): TieBreakEntry {
  const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s+(asc|desc))?\s*$/.exec(text);
  if (!match) return fail(`"${text}": expected a knob ("draftTokens", "steps desc") or a metric name`);
  const name = match[1]!;
  if (knobs.includes(name)) return { kind: 'knob', name, descending: match[2] === 'desc' };
  if ((METRIC_NAMES as readonly string[]).includes(name)) {
    if (match[2] !== undefined) fail(`"${text}": a metric is preferred at its better end; write just ${name}`);
    return { kind: 'metric', metric: name as MetricName };
  }
  return fail(`unknown knob or metric "${name}" (knobs: ${knobs.join(', ')}; metrics: ${METRIC_NAMES.join(', ')})`);
}

/** The strategy's view of a run's search: knobs and every valid point (the variants made of them). */
export function searchSpaceOf(search: ResolvedSearch, variants: ReadonlyArray<{ params: Record<string, KnobValue> }>): SearchSpace {
  const names = search.knobs.map((knob) => knob.name);
  const points: SearchPoint[] = variants.filter((variant) => names.every((name) => name in variant.params)).map((variant) => variant.params);
  return { knobs: search.knobs, points };
}

/** The key of a variant made of a point (undefined for a hand-written variant). */
export function pointKeyOfVariant(space: SearchSpace, variant: { params: Record<string, KnobValue> }): string | undefined {
  return space.knobs.every((knob) => knob.name in variant.params) ? pointKey(space, variant.params) : undefined;
}
