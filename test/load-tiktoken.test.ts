import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadPrompts } from '../src/load/prompts.js';
import { loadTokenizer } from '../src/load/tokenizers/model.js';
import { UserError } from '../src/util/errors.js';

const CORPUS =
  'the server streams each token to the client. the model answers code and math questions; the batch grows, ' +
  'the queue waits, the kernel runs. what is the latency of the first token? each request has a prompt and a ' +
  'completion, and the speculative draft is accepted or rejected by the target model at every step.';

/** cl100k_base's pre-tokenizer split, so the trained merges never cross a piece the encoder would cut. */
const SPLIT = /('s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

/** A tiny byte-level BPE trainer: all 256 bytes, then the most frequent adjacent pair merged, `merges` times. */
function trainTiktoken(corpus: string, merges: number): string {
  const vocabulary: Buffer[] = Array.from({ length: 256 }, (_, byte) => Buffer.from([byte]));
  let words: Buffer[][] = [...corpus.matchAll(SPLIT)].map((match) => [...Buffer.from(match[0])].map((byte) => Buffer.from([byte])));
  for (let round = 0; round < merges; round++) {
    const counts = new Map<string, number>();
    for (const word of words) {
      for (let at = 0; at + 1 < word.length; at++) {
        const key = `${word[at]!.toString('base64')} ${word[at + 1]!.toString('base64')}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    }
    const [bestKey] = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0] ?? [];
    if (!bestKey) break;
    const [left, right] = bestKey.split(' ').map((part) => Buffer.from(part, 'base64')) as [Buffer, Buffer];
    const merged = Buffer.concat([left, right]);
    vocabulary.push(merged);
    words = words.map((word) => {
      const next: Buffer[] = [];
      for (let at = 0; at < word.length; at++) {
        if (at + 1 < word.length && word[at]!.equals(left) && word[at + 1]!.equals(right)) {
          next.push(merged);
          at++;
        } else next.push(word[at]!);
      }
      return next;
    });
  }
  return vocabulary.map((token, rank) => `${token.toString('base64')} ${rank}`).join('\n');
}

let dir: string;
let vocabularyPath: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'servelab-tiktoken-'));
  vocabularyPath = join(dir, 'tiny-cl100k_base.tiktoken');
  writeFileSync(vocabularyPath, `${trainTiktoken(CORPUS, 120)}\n`);
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('tiktoken vocabularies (.tiktoken, js-tiktoken)', () => {
  test('a locally trained vocabulary encodes with its merges and decodes back', () => {
    const tokenizer = loadTokenizer(vocabularyPath);
    const text = 'the server streams each token';
    const ids = tokenizer.encode(text);
    assert.ok(ids.length < Buffer.byteLength(text) / 2, `merges used: ${ids.length} tokens for ${Buffer.byteLength(text)} bytes`);
    assert.equal(tokenizer.decode(ids), text);
    assert.equal(tokenizer.count(text), ids.length);
    assert.equal(tokenizer.countPrompt(text), ids.length, 'tiktoken adds no BOS');
    assert.equal(tokenizer.renderChat, undefined);
  });

  test('synthetic prompts are exactly N of its tokens, reproducibly', async () => {
    const tokenizer = loadTokenizer(vocabularyPath);
    const source = { kind: 'synthetic', inputTokens: { kind: 'uniform', min: 1, max: 300 }, outputTokens: { kind: 'fixed', value: 8 }, seed: 3 } as const;
    const words = await loadPrompts(source, 30);
    const items = await loadPrompts(source, 30, { tokenizer, chat: false });
    assert.deepEqual(
      items.map((item) => tokenizer.count(item.prompt)),
      words.map((item) => item.inputTokens),
    );
    for (const item of items) assert.equal(item.inputTokens, tokenizer.count(item.prompt));
    assert.deepEqual(await loadPrompts(source, 30, { tokenizer, chat: false }), items);
  });

  test('a bad line, an unnamed encoding or missing byte tokens are UserErrors naming the file', () => {
    const bad = join(dir, 'bad-cl100k_base.tiktoken');
    writeFileSync(bad, 'IQ== 0\nnot base64! 1\n');
    assert.throws(
      () => loadTokenizer(bad),
      (error: unknown) => error instanceof UserError && /bad-cl100k_base\.tiktoken line 2/.test(error.message),
    );
    const unnamed = join(dir, 'vocab.tiktoken');
    writeFileSync(unnamed, `${trainTiktoken(CORPUS, 0)}\n`);
    assert.throws(
      () => loadTokenizer(unnamed),
      (error: unknown) => error instanceof UserError && /split pattern of .*vocab\.tiktoken/.test(error.message),
    );
    const partial = join(dir, 'partial-gpt2.tiktoken');
    writeFileSync(partial, `${Buffer.from('a').toString('base64')} 0\n`);
    assert.throws(
      () => loadTokenizer(partial),
      (error: unknown) => error instanceof UserError && /partial-gpt2\.tiktoken lacks 255 of the 256 single-byte tokens/.test(error.message),
    );
  });
});
