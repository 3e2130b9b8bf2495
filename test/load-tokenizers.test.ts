import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadPrompts } from '../src/load/prompts.js';
import { loadTokenizer } from '../src/load/tokenizers/model.js';
import { UserError } from '../src/util/errors.js';

/** Tokenizers trained locally by test/fixtures/tokenizers/train.py (BPE, WordPiece, Unigram). */
const trained = (name: string) => fileURLToPath(new URL(`../../test/fixtures/tokenizers/${name}`, import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`../../test/fixtures/load/${name}`, import.meta.url));
const KINDS = ['bpe', 'wordpiece', 'unigram'] as const;

describe('model tokenizers', () => {
  test('each trained model type encodes and decodes the text it was trained on', () => {
    for (const kind of KINDS) {
      const tokenizer = loadTokenizer(trained(`${kind}/tokenizer.json`));
      const ids = tokenizer.encode('the server streams each token');
      assert.ok(ids.length >= 5 && ids.length < 20, `${kind}: ${ids.length} tokens`);
      assert.equal(tokenizer.count('the server streams each token'), ids.length);
      assert.match(tokenizer.decode(ids).trim(), /^the server streams each token$/);
      assert.equal(tokenizer.count(''), 0);
    }
  });

  test('prompt counts add the special tokens the post-processor adds (BOS, [CLS]/[SEP])', () => {
    const text = 'code and math prompts';
    const expectedExtra = { bpe: 1, wordpiece: 2, unigram: 1 };
    for (const kind of KINDS) {
      const tokenizer = loadTokenizer(trained(`${kind}/tokenizer.json`));
      assert.equal(tokenizer.countPrompt(text), tokenizer.count(text) + expectedExtra[kind], kind);
    }
  });

  test('a model directory gives the tokenizer and its chat template', () => {
    const tokenizer = loadTokenizer(trained('bpe'));
    assert.ok(tokenizer.renderChat);
    const rendered = tokenizer.renderChat([{ role: 'user', content: 'Hello!' }]);
    assert.equal(rendered, '<s><|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n');
    // Special tokens of the template are single tokens (ids 1-3), not spelled out.
    const specialIds = tokenizer.encode(rendered).filter((id) => id >= 1 && id <= 3);
    assert.deepEqual(specialIds, [1, 2, 3, 2]);
    assert.equal(loadTokenizer(trained('unigram')).renderChat, undefined);
  });

  test('WordLevel tokenizers still count words and punctuation', () => {
    assert.equal(loadTokenizer(fixture('wordlevel-tokenizer.json')).count('the model, the token.'), 6);
  });

  test('unreadable or unusable tokenizers are UserErrors with the path', () => {
    assert.throws(
      () => loadTokenizer(fixture('missing.json')),
      (error: unknown) => error instanceof UserError && /missing\.json/.test(error.message),
    );
    assert.throws(
      () => loadTokenizer(fixture('')),
      (error: unknown) => error instanceof UserError && /holds no tokenizer\.json/.test(error.message),
    );
    assert.throws(
      () => loadTokenizer(fixture('prompts.jsonl')),
      (error: unknown) => error instanceof UserError && /cannot read tokenizer/.test(error.message),
    );
  });
});

describe('synthetic prompts of exactly N model tokens', () => {
  test('every drawn length is exact for BPE, WordPiece and Unigram, and reproducible', async () => {
    for (const kind of KINDS) {
      const tokenizer = loadTokenizer(trained(kind));
      const source = { kind: 'synthetic', inputTokens: { kind: 'uniform', min: 1, max: 300 }, outputTokens: { kind: 'fixed', value: 8 }, seed: 5 } as const;
      const items = await loadPrompts(source, 40, { tokenizer, chat: false });
      for (const item of items) {
        const content = item.prompt;
        const drawn = item.inputTokens - (tokenizer.countPrompt(content) - tokenizer.count(content));
        assert.equal(tokenizer.count(content), drawn, `${kind}: ${JSON.stringify(content.slice(0, 40))}`);
        assert.equal(item.inputTokens, tokenizer.countPrompt(content));
      }
      assert.deepEqual(await loadPrompts(source, 40, { tokenizer, chat: false }), items);
    }
  });

  test('the drawn lengths are the distribution sampled, as without a tokenizer', async () => {
    const tokenizer = loadTokenizer(trained('bpe'));
    const source = { kind: 'synthetic', inputTokens: { kind: 'uniform', min: 1, max: 300 }, outputTokens: { kind: 'fixed', value: 8 }, seed: 9 } as const;
    const words = await loadPrompts(source, 30);
    const exact = await loadPrompts(source, 30, { tokenizer, chat: false });
    // Same seed, same drawn lengths: the word prompts have N words, the tokenizer prompts N tokens.
    assert.deepEqual(
      exact.map((item) => tokenizer.count(item.prompt)),
      words.map((item) => item.inputTokens),
    );
  });

  test('for chat, the recorded prompt tokens are the chat-templated count the server sees', async () => {
    const tokenizer = loadTokenizer(trained('bpe'));
    const source = { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 64 }, outputTokens: { kind: 'fixed', value: 8 }, seed: 1 } as const;
    const [item] = await loadPrompts(source, 1, { tokenizer, chat: true });
    assert.equal(tokenizer.count(item!.prompt), 64);
    assert.equal(item!.inputTokens, tokenizer.count(tokenizer.renderChat!([{ role: 'user', content: item!.prompt }])));
    assert.ok(item!.inputTokens > 64);
  });
});
