/** The comparisons of objective.subjectTo: "< 500", ">= 0.99", and for accuracy ">= baseline - 1%". */
import type { Constraint } from './types.js';

/** What a subjectTo value may look like (the schema checks it; `parseConstraint` reads it). */
export const CONSTRAINT = /^\s*(<=|>=|<|>)\s*(?:(-?\d+(?:\.\d+)?)|baseline\s*(?:([+-])\s*(\d+(?:\.\d+)?)\s*%)?)\s*$/;

/** A parsed comparison: against a fixed value, or (`baselineOffset`) against the baseline's value plus this offset. */
export type Comparison = { op: Constraint['op']; value: number } | { op: Constraint['op']; baselineOffset: number };

/** "baseline - 1%" is the baseline's share less one percentage point: offset −0.01. */
export function parseConstraint(text: string): Comparison {
  const match = CONSTRAINT.exec(text)!;
  const op = match[1] as Constraint['op'];
  if (match[2] !== undefined) return { op, value: Number(match[2]) };
  const points = match[4] === undefined ? 0 : Number(match[4]) / 100;
  return { op, baselineOffset: match[3] === '-' ? -points : points };
}

export function holds(value: number, op: Constraint['op'], limit: number): boolean {
  return op === '<' ? value < limit : op === '<=' ? value <= limit : op === '>' ? value > limit : value >= limit;
}
