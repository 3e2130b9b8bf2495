/** Answers as JSON Lines (one RequestOutput per line): written by `bench --save-outputs`, read by `compare-outputs`. */
import { readFileSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { messageOf, UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import type { RequestOutput } from './types.js';

const OutputLine = z.strictObject({
  prompt: z.number().int().min(0),
  level: z.string(),
  text: z.string(),
  tokenIds: z.array(z.number().int()).optional(),
  finishReason: z.string().optional(),
  error: z.string().optional(),
});

export function writeOutputsFile(path: string, outputs: readonly RequestOutput[]): void {
  try {
    writeFileSync(path, outputs.map((output) => `${JSON.stringify(output)}\n`).join(''));
  } catch (error) {
    throw new UserError(`cannot write ${path}: ${messageOf(error)}`, 'pick a writable --save-outputs path');
  }
}

/** Every answer of a saved file; an unreadable file or line is a usage error naming the line. */
export function readOutputsFile(path: string): RequestOutput[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UserError(`cannot read ${path}: ${messageOf(error)}`, 'give a file written by servelab bench --save-outputs', ExitCode.usage);
  }
  const outputs: RequestOutput[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = undefined;
    }
    const parsed = OutputLine.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const detail = value === undefined ? 'not JSON' : `${issue?.path.join('.') || 'line'}: ${issue?.message}`;
      throw new UserError(`${path}:${index + 1}: not an output line (${detail})`, 'give a file written by servelab bench --save-outputs', ExitCode.usage);
    }
    outputs.push(parsed.data);
  }
  if (outputs.length === 0) throw new UserError(`${path} holds no outputs`, 'give a file written by servelab bench --save-outputs', ExitCode.usage);
  return outputs;
}
