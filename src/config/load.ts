import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Document, LineCounter, Node as YamlNode } from 'yaml';
import type { z } from 'zod';
import { messageOf, UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import { describeIssues } from './issues.js';

type Yaml = typeof import('yaml');
let yamlModule: Yaml | undefined;
/**
 * The yaml package, loaded at the first file read: its ~60 CommonJS modules took 70-90 ms of every start of a
 * process that imports this one, and the simulator (started once per point of a search) reads no file without
 * --config. Its CommonJS build is what `import` gave too.
 */
function yaml(): Yaml {
  yamlModule ??= createRequire(import.meta.url)('yaml') as Yaml;
  return yamlModule;
}

/**
 * Read a YAML (or JSON) file and validate it against a zod schema. Every failure names the file, the line, the key
 * path and what was expected in plain words, e.g. `exp.yaml:12: trails: unknown key "trails" (did you mean
 * "trials"?)`, and exits with the usage code.
 */
export function loadConfigFile<Schema extends z.ZodType>(path: string, schema: Schema): z.output<Schema> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UserError(`cannot read config file ${path}: ${messageOf(error)}`, 'check the path', ExitCode.usage);
  }
  return parseConfigText(path, text, schema);
}

export function parseConfigText<Schema extends z.ZodType>(path: string, text: string, schema: Schema): z.output<Schema> {
  const { LineCounter, parseDocument } = yaml();
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { prettyErrors: true, lineCounter });
  const syntaxError = document.errors[0];
  if (syntaxError) {
    const position = syntaxError.linePos?.[0];
    const where = position ? `${path}:${position.line}:${position.col}` : path;
    throw new UserError(`${where}: YAML syntax error: ${syntaxError.message.split('\n')[0]}`, `fix the YAML syntax in ${path}`, ExitCode.usage);
  }
  const input: unknown = document.toJS() ?? {};
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const located = describeIssues(schema, input, result.error.issues)
    .map((problem) => ({
      line: problem.isKey ? keyLine(document, problem.path, lineCounter) : valueLine(document, problem.path, lineCounter),
      key: formatKeyPath(problem.path),
      message: problem.message,
    }))
    .sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
  const lineOfProblem = ({ line, key, message }: (typeof located)[number]) => `${line ? `${path}:${line}` : path}: ${key}: ${message}`;
  if (located.length === 1) throw new UserError(lineOfProblem(located[0]!), `fix ${located[0]!.key} in ${path}`, ExitCode.usage);
  // Every problem at once, in file order: a file is fixed in one pass, not one error per run.
  throw new UserError(
    `${path}: ${located.length} problems:\n${located.map((problem) => `  ${lineOfProblem(problem)}`).join('\n')}`,
    `fix them in ${path}`,
    ExitCode.usage,
  );
}

/**
 * The line where `keyPath` (as errors name keys: `client.warmup`, `workloads[0].trace`) is written in the YAML file at `path`, or
 * its nearest written parent's; undefined when the file cannot be read or no part of the path is in it. For errors
 * found after the schema check, so they point at a line like the schema's own.
 */
export function lineOfKey(path: string, keyPath: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  const { LineCounter, parseDocument } = yaml();
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter });
  const parts = keyPath.split(/\.|(?=\[)/).map((part) => (/^\[\d+\]$/.test(part) ? Number(part.slice(1, -1)) : part));
  for (let depth = parts.length; depth >= 1; depth--) {
    if (document.hasIn(parts.slice(0, depth))) return keyLine(document, parts.slice(0, depth), lineCounter);
  }
  return undefined;
}

export function formatKeyPath(path: ReadonlyArray<PropertyKey>): string {
  if (path.length === 0) return '(top level)';
  return path.map((part, index) => (typeof part === 'number' ? `[${part}]` : `${index === 0 ? '' : '.'}${String(part)}`)).join('');
}

function lineOf(node: YamlNode | undefined, lineCounter: LineCounter): number | undefined {
  const offset = node?.range?.[0];
  return offset === undefined ? undefined : lineCounter.linePos(offset).line;
}

/** Line of the value at `path`, or of the nearest enclosing value that exists (a missing key's mapping). */
function valueLine(document: Document, path: ReadonlyArray<string | number>, lineCounter: LineCounter): number | undefined {
  for (let depth = path.length; depth >= 0; depth--) {
    const line = lineOf(document.getIn(path.slice(0, depth), true) as YamlNode | undefined, lineCounter);
    if (line !== undefined) return line;
  }
  return undefined;
}

/** Line of the key itself (an unknown key is reported where it is written, not at its parent). */
function keyLine(document: Document, path: ReadonlyArray<string | number>, lineCounter: LineCounter): number | undefined {
  const parent = path.length > 1 ? document.getIn(path.slice(0, -1), true) : document.contents;
  const { isMap, isScalar } = yaml();
  if (isMap(parent)) {
    const pair = parent.items.find((item) => isScalar(item.key) && String(item.key.value) === String(path.at(-1)));
    const line = lineOf(pair?.key as YamlNode | undefined, lineCounter);
    if (line !== undefined) return line;
  }
  return valueLine(document, path, lineCounter);
}
