import type { z } from 'zod';
import { describeKeys, entryOf, type KeyDoc, kindsOf, optionsOf, shapeOf } from '../../config/schema-doc.js';
import { metricDef } from '../../metrics/catalog.js';
import { workloadLabel } from '../spec/load.js';
import { experimentFileSchema, workloadFormsSchema } from '../spec/schema.js';
import { METRIC_NAMES } from '../spec/types.js';

/**
 * docs/experiment-file.md, rendered from the experiment file's zod schema (keys, types, defaults, descriptions and
 * examples live there) and from the code that names workloads and metrics. `npm run docs:gen` writes it; a test
 * fails when the checked-in file differs, so the reference cannot drift.
 */
export function renderExperimentFileDoc(): string {
  const top = experimentFileSchema as unknown as z.ZodType;
  const at = (key: string): z.ZodType => shapeOf(top)![key]!;
  const client = at('client');
  const sections = [
    '# The experiment file',
    '',
    '<!-- Generated from src/experiment/spec/schema.ts by `npm run docs:gen`: edit the schema descriptions, not this file. -->',
    '',
    'An experiment file (YAML or JSON) is what `servelab run FILE` and `servelab plan FILE` read. Unknown keys are',
    'refused with the keys allowed at that place; a duration is `"90s"`, `"20m"`, `"1h"`, `"500ms"` or a number of',
    'seconds. Required keys have no default; a key marked — is optional, and its meaning says what leaving it out does.',
    '',
    keyTable('Top level', top),
    keyTable('`server:`', at('server')),
    ...optionsOf(at('executor')).map((form) => keyTable(`\`executor:\` kind ${kindsOf(form).join(', ')}`, form)),
    keyTable('`client:` (variants may override all but backend, slo and cache)', client),
    ...optionsOf(shapeOf(client)!.prompts!).map((form) => keyTable(`\`client.prompts:\` kind ${kindsOf(form).join(', ')}`, form)),
    keyTable('`client.prompts.fields:` (dataset record fields)', promptKey(client, 'fields')),
    keyTable('`client.prompts.window:` (the stretch of a trace replayed)', promptKey(client, 'window')),
    lengthSection(),
    keyTable('`client.slo:`', shapeOf(client)!.slo!),
    keyTable('`client.warmup:`', shapeOf(client)!.warmup!),
    workloadSection(),
    keyTable('`variants.<name>:`', entryOf(at('variants'))),
    variantMergeSection(),
    keyTable('`grid:` entries', entryOf(at('grid'))),
    placeholderSection(),
    searchSection(at('search')),
    // Every other section of the file, in the schema's order, so a section added to the schema is documented.
    ...Object.keys(shapeOf(top)!)
      .filter((key) => !RENDERED_ABOVE.has(key))
      .flatMap((key) => mappingSections(key, at(key))),
    metricSection(),
  ];
  return `${sections.join('\n').trimEnd()}\n`;
}

/** Top-level sections with a layout of their own (forms by kind, entries, merge rules) in the sections above. */
const RENDERED_ABOVE = new Set(['server', 'executor', 'client', 'workloads', 'variants', 'grid', 'search']);

/** A mapping's table, then one for each mapping inside it (`quality.equivalence:`); nothing for a plain value. */
function mappingSections(path: string, schema: z.ZodType): string[] {
  const shape = shapeOf(schema);
  if (!shape) return [];
  // A mapping made only of mappings (quality:) is documented by its parts; a mapping inside another's keys is a row.
  if (Object.values(shape).some((child) => !shapeOf(child))) return [keyTable(`\`${path}:\``, schema)];
  return Object.entries(shape).flatMap(([key, child]) => mappingSections(`${path}.${key}`, child));
}

/** The schema of `key` in the prompt-source form that has it. */
function promptKey(client: z.ZodType, key: string): z.ZodType {
  return optionsOf(shapeOf(client)!.prompts!)
    .map((form) => shapeOf(form)?.[key])
    .find((schema) => schema !== undefined)!;
}

function keyTable(title: string, schema: z.ZodType): string {
  const rows = describeKeys(schema).map(
    (doc) => `| \`${doc.key}\` | ${cell(doc.type)} | ${defaultCell(doc)} | ${cell(doc.description ?? '')}${exampleText(doc)} |`,
  );
  return [`## ${title}`, '', '| key | type | default | meaning |', '|---|---|---|---|', ...rows, ''].join('\n');
}

function defaultCell(doc: KeyDoc): string {
  if (doc.required) return 'required';
  if (doc.sectionDefault) return 'see its keys';
  if (!('default' in doc)) return '—';
  return `\`${JSON.stringify(doc.default)}\``;
}

function exampleText(doc: KeyDoc): string {
  return doc.example === undefined ? '' : ` Example: \`${JSON.stringify(doc.example)}\``;
}

function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

function lengthSection(): string {
  return [
    '## Token lengths (`inputTokens`, `outputTokens`)',
    '',
    'A number (`256`), the flag shorthand (`"normal:512,64"`, `"normal:MEAN,SD,MIN,MAX"`, `"uniform:100,200"`), or a',
    'mapping `{ kind: fixed, value }`, `{ kind: uniform, min, max }` or `{ kind: normal, mean, stddev, min?, max? }`.',
    '',
  ].join('\n');
}

const WORKLOAD_EXAMPLES = [
  { kind: 'single-stream', requests: 16 },
  { kind: 'concurrency', concurrency: 16, requests: 64 },
  { kind: 'rate', requestsPerSecond: 20, arrival: 'poisson', maxInFlight: 256, requests: 200 },
  { kind: 'sweep', concurrencies: [8, 32], requestsPerLevel: 128 },
  { kind: 'trace', maxInFlight: 256 },
  { kind: 'capacity', over: 'rate', min: 0.5, max: 32, steps: 6, requestsPerStep: 200, slo: { ttftP99Ms: 500, tpotP99Ms: 50 } },
] as const;

function workloadSection(): string {
  const forms = optionsOf(workloadFormsSchema);
  const lines = ['## `workloads:` entries', '', 'Each entry is one of these kinds; each trial measures one workload.', ''];
  for (const form of forms) lines.push(keyTable(`\`workloads[]\` kind ${kindsOf(form).join(', ')}`, form).replace(/^## /, '### '));
  lines.push(
    '### Workload names',
    '',
    'Results, verdicts, `objective.workload` and the report name a workload as follows (a sweep becomes one',
    'concurrency workload per level, each its own trial and verdict):',
    '',
    '| entry | name |',
    '|---|---|',
    ...WORKLOAD_EXAMPLES.map((workload) => `| \`${JSON.stringify(workload)}\` | ${names(workload)} |`),
    '',
  );
  return lines.join('\n');
}

function names(workload: (typeof WORKLOAD_EXAMPLES)[number]): string {
  if (workload.kind !== 'sweep') return `\`${workloadLabel(workload)}\``;
  return workload.concurrencies
    .map((concurrency) => `\`${workloadLabel({ kind: 'concurrency', concurrency, requests: workload.requestsPerLevel })}\``)
    .join(', ');
}

function variantMergeSection(): string {
  return [
    '### How a variant combines with `server:` and `client:`',
    '',
    '- `args` are appended to `server.command` (after `{servelab}` is filled in); a variant cannot remove arguments.',
    '- `env` is merged over `server.env` (the variant wins per name); a variant setting a name in `server.unsetEnv`',
    '  sets it; `unsetEnv` removes names from the merged env.',
    '- `client` keys replace the experiment `client:` values one key at a time (`prompts` as a whole).',
    '- Variants whose server command, env, cwd and model come out equal share one running server.',
    '- No `variants:` and no `grid:`: one variant named `baseline`. `baseline:` defaults to the first variant.',
    '',
  ].join('\n');
}

function placeholderSection(): string {
  return [
    '## Placeholders',
    '',
    '| placeholder | where | replaced by |',
    '|---|---|---|',
    "| `{servelab}` | `server.command`, variant `args` | the path of this servelab's CLI (bin/servelab.js), so `node {servelab} simulate …` runs from any directory |",
    '| `{port}` | `server.command`, args, env values | a free port picked at each launch (in `server.portRange` when given), or `server.port` |',
    '| `{host}` | `server.command`, args, env values | the address the server binds |',
    "| `{param}` | a `grid:` entry's `name`, `args` and `env` values | each value of that grid parameter |",
    "| `{knob}` | `search.name`, `search.args` and `search.env` values | each point's value of that knob |",
    '',
    'Fingerprints record `{port}`/`{host}` values as the template, so a new port is no environment change.',
    '',
  ].join('\n');
}

/** `search:`: what it does in a paragraph, then its keys, a knob's forms and the budget's keys. */
function searchSection(search: z.ZodType): string {
  const knobs = shapeOf(search)!;
  return [
    '## `search:` (searching a space of server settings)',
    '',
    'Instead of listing configs, name the knobs and the values each may take: every combination that meets the',
    '`constraints` is a point, and each point is a variant (its name from `name`, its server args and env filled from',
    '`{knob}` placeholders). A point breaking a constraint is never started. The run measures the points in blocks,',
    'each point of a block once at every workload (each workload is a load level), and after each block a strategy',
    'decides: which points to measure next (a space-filling design first, then where a model of the measured response',
    'says a point can still win), which are out (clearly behind the leader, or within `tolerance` of it so a near-tie',
    "ends early) and when to stop: the leader of each level is within `tolerance` of that level's best with the",
    'stated `confidence`, or `budget` is spent (checked between blocks; the end then says what is unresolved).',
    'Among points shown within the tolerance, `tieBreak` picks (fewest draft tokens, lowest J/token, …); a point it',
    'prefers is measured on until it is shown, or until its bounds place it more than half the tolerance behind the',
    "leader. The objective's metric (else `metric:`) is what is optimised; `objective.subjectTo` constraints hold as",
    'for any run. Each decision is stored with the run, so `--resume` replays them; `plan` shows the space, what one point costs,',
    'the full grid and what the budget buys; `show` (`show --json`: a `search` object), the report and the UI show',
    'where it stands, its leaders with their margins, the budget spent, its decisions per measured point (in place of',
    'verdicts: a search has no baseline; each point as best, leader, as good, not better, out or still racing, per level',
    'and across levels, with its estimate vs the leader, bounds and blocks, and its trials; the points never measured',
    'counted) and, per load level, a heatmap of the measured response over the two knobs that move it most, marked',
    "with the search's decisions (★ the level's stated best, ◆ its leader where the tie-break chose another, ≈ judged",
    'as good; never a mark from raw medians), and list only the measured points; `run` ends with the same decisions',
    "per point, then the answer. `export --level trial` gives each trial row its point's decision as columns:",
    '`conclusion.searchStatus`, `conclusion.searchDecidedAfterBlock`, and `conclusion.searchRace.<level>.<field>` per race',
    '(each level, `*` across levels) with the fields `status`, `versus` (the leader it was judged against), `estimate`,',
    "`lower`, `upper` (relative to that leader, in the objective's direction) and `blocks`; points never measured have",
    'no trials, so no rows (`show` counts them). `run --json`, `show --json` and `ls --json` of a search name no',
    "baseline in the run's config and carry no verdicts against one: `search` carries the answer (each level's",
    '`best`) and the decisions per point (`table`).',
    "The search's answer is the run's conclusion in every view (`run`, `show`, `ls`, the report, the UI, `export`'s",
    '`conclusion.searchBestAt`): the best config per level and across levels, each within `tolerance` of the best at',
    "`confidence` (the tie-break's choice, else the leader, judged on block-adjusted estimates so a drift between",
    'blocks cancels), or the leader so far marked not resolved; no ranking of raw medians stands beside it.',
    'Not with executor `slurm`.',
    '',
    keyTable('`search:` keys', search),
    keyTable('`search.knobs.<name>:` as a range', optionsOf(entryOf(knobs.knobs!))[1]!),
    keyTable('`search.budget:`', knobs.budget!),
  ].join('\n');
}

function metricSection(): string {
  return [
    '## Metric names (`metric:`, `objective`)',
    '',
    '| metric | unit | better | what it is |',
    '|---|---|---|---|',
    ...METRIC_NAMES.map((metric) => {
      const { unit, better, description } = metricDef(metric);
      return `| \`${metric}\` | ${unit} | ${better} | ${description} |`;
    }),
    '',
  ].join('\n');
}
