/**
 * quality.accuracy's scorers: is one answer right? Pure. Each reads what the model said and compares it with the
 * record's answer, as the usual harnesses do (lm-evaluation-harness's exact_match with ignore_case and strip, GSM8K's
 * last-number rule, MMLU-style "the answer is (X)").
 */

export type Scorer = { kind: 'exact' } | { kind: 'last-number' } | { kind: 'choice' } | { kind: 'regex'; pattern: RegExp };

/** What `quality.accuracy.scorer` accepts, for the schema's message. */
export const SCORER_FORMS = 'exact, last-number, choice or regex:PATTERN';

/** The scorer named in a file; undefined when the text names none (or its regex does not compile). */
export function parseScorer(text: string): Scorer | undefined {
  if (text === 'exact' || text === 'last-number' || text === 'choice') return { kind: text };
  if (!text.startsWith('regex:') || text.length === 'regex:'.length) return undefined;
  try {
    return { kind: 'regex', pattern: new RegExp(text.slice('regex:'.length), 'i') };
  } catch {
    return undefined;
  }
}

/** A scored answer: whether it is right, and what the scorer read from the output (undefined: found nothing). */
export interface Score {
  correct: boolean;
  extracted?: string;
}

const NUMBER = /-?\d[\d,]*(?:\.\d+)?/g;

/** The number in a text, commas dropped; undefined when it has none. */
function lastNumber(text: string): number | undefined {
  const found = text.match(NUMBER);
  if (!found) return undefined;
  const value = Number(found[found.length - 1]!.replaceAll(',', ''));
  return Number.isFinite(value) ? value : undefined;
}

/**
 * The letter an answer picks: "answer is (B)" / "answer: B" first, else the first standalone capital A–D (a lone
 * lower-case "a" is the article, not a choice).
 */
function choiceOf(text: string): string | undefined {
  const stated = /answer(?:\s+is)?\s*[:\s]\s*\(?([A-D])\)?(?![A-Za-z])/i.exec(text);
  if (stated) return stated[1]!.toUpperCase();
  return /(?<![A-Za-z])\(?([A-D])\)?(?![A-Za-z])/.exec(text)?.[1];
}

const normalise = (text: string): string => text.trim().toLowerCase();

export function scoreAnswer(scorer: Scorer, output: string, answer: string): Score {
  switch (scorer.kind) {
    case 'exact':
      return { correct: normalise(output) === normalise(answer), extracted: output.trim() };
    case 'last-number': {
      const said = lastNumber(output);
      const expected = lastNumber(answer);
      return { correct: said !== undefined && expected !== undefined && said === expected, ...(said !== undefined && { extracted: String(said) }) };
    }
    case 'choice': {
      const said = choiceOf(output);
      const expected = choiceOf(answer) ?? normalise(answer).toUpperCase();
      return { correct: said !== undefined && said === expected, ...(said !== undefined && { extracted: said }) };
    }
    case 'regex': {
      const match = scorer.pattern.exec(output);
      if (!match) return { correct: false };
      const said = match[1] ?? match[0];
      return { correct: normalise(said) === normalise(answer), extracted: said };
    }
  }
}
