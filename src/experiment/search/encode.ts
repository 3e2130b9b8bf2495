/**
 * Points of a search space as vectors in the unit cube, the coordinates the design's distances and the response
 * model's kernel work in: a numeric knob is one coordinate (its value, or its log with `log: true`, scaled to
 * [0, 1]); a list of names is one-hot, scaled so two different names are as far apart (1) as a numeric knob's ends.
 */
import type { Knob, KnobValue, SearchSpace } from './types.js';

function numericCoordinate(knob: Knob): (value: KnobValue) => number {
  const scale = (value: number): number => (knob.log ? Math.log(value) : value);
  const scaled = knob.values.map((value) => scale(Number(value)));
  const low = Math.min(...scaled);
  const span = Math.max(...scaled) - low;
  return (value) => (span > 0 ? (scale(Number(value)) - low) / span : 0);
}

/** The coordinates of one knob's value: one number, or a one-hot block for a list of names. */
function knobEncoder(knob: Knob): (value: KnobValue) => number[] {
  if (knob.numeric) {
    const coordinate = numericCoordinate(knob);
    return (value) => [coordinate(value)];
  }
  const names = knob.values.map(String);
  return (value) => names.map((name) => (name === String(value) ? Math.SQRT1_2 : 0));
}

/** Every point of the space as a vector, in the space's order. */
export function encodePoints(space: SearchSpace): number[][] {
  const encoders = space.knobs.map((knob) => ({ name: knob.name, encode: knobEncoder(knob) }));
  return space.points.map((point) => encoders.flatMap(({ name, encode }) => encode(point[name]!)));
}

export function squaredDistance(a: readonly number[], b: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < a.length; i += 1) sum += (a[i]! - b[i]!) ** 2;
  return sum;
}
