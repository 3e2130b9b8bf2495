/**
 * Constraints between a search's knobs, e.g. `draftTokens <= steps * topk + 1`: one comparison of two arithmetic
 * expressions (+ - * / and parentheses over numbers and knob names). A small recursive-descent parser, never eval:
 * a file's text is data. `parseKnobConstraint` returns the compiled test or the reason it cannot be read.
 */

export type KnobValues = Readonly<Record<string, number | string>>;

type Expr = (values: KnobValues) => number;

const COMPARISONS = ['<=', '>=', '==', '!=', '<', '>'] as const;
type Comparison = (typeof COMPARISONS)[number];

interface Token {
  text: string;
  kind: 'number' | 'name' | 'op';
  /** 1-based column in the constraint's text, for the error. */
  column: number;
}

export type ParsedConstraint = { ok: true; holds: (values: KnobValues) => boolean } | { ok: false; message: string };

/** Compile `text` against the knob names it may use; numeric knobs only (a list of names has no order). */
export function parseKnobConstraint(text: string, numericKnobs: readonly string[], otherKnobs: readonly string[] = []): ParsedConstraint {
  const lexed = tokenize(text);
  if (typeof lexed === 'string') return { ok: false, message: lexed };
  const tokens = lexed;
  let at = 0;
  const fail = (message: string): never => {
    throw new ConstraintSyntax(message);
  };
  const peek = (): Token | undefined => tokens[at];
  const describe = (token: Token | undefined): string => (token ? `"${token.text}" at column ${token.column}` : 'the end');

  function primary(): Expr {
    const token = peek();
    if (!token) return fail('expected a number, a knob or "(" at the end');
    at += 1;
    if (token.kind === 'number') {
      const value = Number(token.text);
      return () => value;
    }
    if (token.kind === 'name') {
      if (otherKnobs.includes(token.text)) fail(`knob "${token.text}" is a list of names, which has no order to compare (column ${token.column})`);
      if (!numericKnobs.includes(token.text))
        fail(`unknown knob "${token.text}" at column ${token.column} (knobs: ${[...numericKnobs, ...otherKnobs].join(', ')})`);
      const name = token.text;
      return (values) => Number(values[name]);
    }
    if (token.text === '-') {
      const inner = primary();
      return (values) => -inner(values);
    }
    if (token.text === '(') {
      const inner = sum();
      if (peek()?.text !== ')') fail(`expected ")" instead of ${describe(peek())}`);
      at += 1;
      return inner;
    }
    return fail(`unexpected ${describe(token)}`);
  }

  function product(): Expr {
    let left = primary();
    while (peek()?.text === '*' || peek()?.text === '/') {
      const op = peek()!.text;
      at += 1;
      const l = left;
      const r = primary();
      left = op === '*' ? (values) => l(values) * r(values) : (values) => l(values) / r(values);
    }
    return left;
  }

  function sum(): Expr {
    let left = product();
    while (peek()?.text === '+' || peek()?.text === '-') {
      const op = peek()!.text;
      at += 1;
      const l = left;
      const r = product();
      left = op === '+' ? (values) => l(values) + r(values) : (values) => l(values) - r(values);
    }
    return left;
  }

  try {
    const left = sum();
    const token = peek();
    if (!token || !COMPARISONS.includes(token.text as Comparison))
      fail(`expected a comparison (${COMPARISONS.join(' ')}) instead of ${describe(token)}, e.g. "draftTokens <= steps * topk + 1"`);
    at += 1;
    const right = sum();
    if (peek()) fail(`unexpected ${describe(peek())} after the comparison`);
    const compare = comparator(token!.text as Comparison);
    return { ok: true, holds: (values) => compare(left(values), right(values)) };
  } catch (error) {
    if (error instanceof ConstraintSyntax) return { ok: false, message: error.message };
    throw error;
  }
}

class ConstraintSyntax extends Error {}

function comparator(op: Comparison): (a: number, b: number) => boolean {
  switch (op) {
    case '<=':
      return (a, b) => a <= b;
    case '>=':
      return (a, b) => a >= b;
    case '<':
      return (a, b) => a < b;
    case '>':
      return (a, b) => a > b;
    case '==':
      return (a, b) => a === b;
    case '!=':
      return (a, b) => a !== b;
  }
}

/** Tokens of the constraint, or the first character that cannot start one. */
function tokenize(text: string): Token[] | string {
  const tokens: Token[] = [];
  const pattern = /\s*(?:(\d+(?:\.\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(<=|>=|==|!=|[<>+\-*/()]))/y;
  let at = 0;
  while (at < text.length) {
    if (/^\s*$/.test(text.slice(at))) break;
    pattern.lastIndex = at;
    const match = pattern.exec(text);
    if (!match) {
      const column = at + (text.slice(at).length - text.slice(at).trimStart().length) + 1;
      return `unexpected "${text[column - 1]}" at column ${column} (a constraint compares + - * / expressions of numbers and knobs)`;
    }
    const column = match.index + match[0].length - (match[1] ?? match[2] ?? match[3])!.length + 1;
    if (match[1] !== undefined) tokens.push({ text: match[1], kind: 'number', column });
    else if (match[2] !== undefined) tokens.push({ text: match[2], kind: 'name', column });
    else tokens.push({ text: match[3]!, kind: 'op', column });
    at = pattern.lastIndex;
  }
  return tokens;
}
