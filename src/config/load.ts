import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument, type Node as YamlNode } from 'yaml';
import type { z } from 'zod';
import { UserError, messageOf } from '../util/errors.js';

/**
 * Read a YAML (or JSON) file and validate it against a zod schema. Every failure names the file, the key path
 * and what was expected, e.g. `exp.yaml: variants.eagle3.env.NCCL_ALGO: expected string, received number`.
 */
export function loadConfigFile<Schema extends z.ZodType>(path: string, schema: Schema): z.output<Schema> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UserError(`cannot read config file ${path}: ${messageOf(error)}`, 'check the path');
  }
  return parseConfigText(path, text, schema);
}

export function parseConfigText<Schema extends z.ZodType>(path: string, text: string, schema: Schema): z.output<Schema> {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { prettyErrors: true, lineCounter });
  const syntaxError = document.errors[0];
  if (syntaxError) {
    const position = syntaxError.linePos?.[0];
    const where = position ? `${path}:${position.line}:${position.col}` : path;
    throw new UserError(`${where}: YAML syntax error: ${syntaxError.message.split('\n')[0]}`, `fix the YAML syntax in ${path}`);
  }
  const result = schema.safeParse(document.toJS() ?? {});
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const keyPath = issue.path.filter((part): part is string | number => typeof part !== 'symbol');
    const line = lineOf(document.getIn(keyPath, true) as YamlNode | undefined, lineCounter);
    const where = line ? `${path}:${line}` : path;
    throw new UserError(`${where}: ${formatKeyPath(keyPath)}: ${issue.message}`, `fix ${formatKeyPath(keyPath)} in ${path}`);
  }
  return result.data;
}

export function formatKeyPath(path: ReadonlyArray<PropertyKey>): string {
  if (path.length === 0) return '(top level)';
  return path.map((part, index) => (typeof part === 'number' ? `[${part}]` : `${index === 0 ? '' : '.'}${String(part)}`)).join('');
}

function lineOf(node: YamlNode | undefined, lineCounter: LineCounter): number | undefined {
  const offset = node?.range?.[0];
  return offset === undefined ? undefined : lineCounter.linePos(offset).line;
}
