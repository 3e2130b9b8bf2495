import { writeFileSync } from 'node:fs';
import { mulberry32 } from '../src/util/random.js';

/**
 * Writes examples/accuracy/arith.jsonl: 60 arithmetic questions with their answers, 15 per category, from a fixed
 * seed (the file is committed; rerun with `npx tsc -p . && node dist/scripts/accuracy-sample.js` only to change it).
 */
const random = mulberry32(2025);
const between = (low: number, high: number): number => low + Math.floor(random() * (high - low + 1));
const NAMES = ['Ada', 'Ben', 'Chloe', 'Dev', 'Elif', 'Femi', 'Goran', 'Hana'];
const THINGS = ['apples', 'marbles', 'stamps', 'pencils', 'shells', 'tickets'];

const CATEGORIES: Record<string, () => { prompt: string; answer: number }> = {
  addition: () => {
    const [a, b] = [between(12, 999), between(12, 999)];
    return { prompt: `What is ${a} + ${b}? Answer with the number only.`, answer: a + b };
  },
  subtraction: () => {
    const [a, b] = [between(200, 999), between(11, 199)];
    return { prompt: `What is ${a} - ${b}? Answer with the number only.`, answer: a - b };
  },
  multiplication: () => {
    const [a, b] = [between(3, 99), between(3, 19)];
    return { prompt: `What is ${a} × ${b}? Answer with the number only.`, answer: a * b };
  },
  'word-problem': () => {
    const name = NAMES[between(0, NAMES.length - 1)]!;
    const thing = THINGS[between(0, THINGS.length - 1)]!;
    const [boxes, each, given] = [between(3, 12), between(4, 15), between(1, 9)];
    return {
      prompt: `${name} has ${boxes} boxes of ${each} ${thing} and gives away ${given}. How many ${thing} are left? Answer with the number only.`,
      answer: boxes * each - given,
    };
  },
};

const lines: string[] = [];
for (let index = 0; index < 15; index += 1) {
  for (const [category, make] of Object.entries(CATEGORIES)) {
    const { prompt, answer } = make();
    lines.push(JSON.stringify({ prompt, answer: String(answer), category }));
  }
}
const path = new URL('../../examples/accuracy/arith.jsonl', import.meta.url);
writeFileSync(path, `${lines.join('\n')}\n`);
process.stdout.write(`wrote ${lines.length} items to ${path.pathname}\n`);
