import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { promptSourceSchema } from '../src/load/config.js';
import { loadPrompts } from '../src/load/prompts.js';
import { loadTokenizer } from '../src/load/tokenizers/model.js';
import type { PromptSource } from '../src/load/types.js';
import { UserError } from '../src/util/errors.js';

const fixture = (name: string) => fileURLToPath(new URL(`../../test/fixtures/load/${name}`, import.meta.url));
const bpe = () => loadTokenizer(fileURLToPath(new URL('../../test/fixtures/tokenizers/bpe', import.meta.url)));

function scratch(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-datasets-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A Parquet file written by hyparquet-writer (a pure-JS writer), as real exports are. */
export function writeParquet(path: string, columns: Array<{ name: string; data: unknown[]; type: 'STRING' | 'INT32' | 'INT64' }>): void {
  writeFileSync(path, Buffer.from(parquetWriteBuffer({ columnData: columns as never })));
}

const userError = (pattern: RegExp) => (error: unknown) => error instanceof UserError && pattern.test(error.message);

describe('ShareGPT: all turns as multi-turn conversations', () => {
  test('every assistant turn after a user turn is one request with the history before it', async () => {
    const items = await loadPrompts({ kind: 'sharegpt', path: fixture('sharegpt-multiturn.json'), shuffle: false }, 4);
    assert.deepEqual(
      items.map((item) => item.category),
      ['chat', 'chat', 'code', 'math'],
    );
    assert.equal(items[0]!.prompt, 'Hello there');
    assert.equal(items[0]!.messages, undefined);
    assert.deepEqual(items[1]!.messages, [
      { role: 'user', content: 'Hello there' },
      { role: 'assistant', content: 'Hi! How can I help you today?' },
      { role: 'user', content: 'Tell me a joke' },
    ]);
    assert.deepEqual(
      items[2]!.messages!.map((message) => message.role),
      ['system', 'user'],
    );
    // Text endpoints get the turns flattened.
    assert.match(items[1]!.prompt, /^User: Hello there\n\nAssistant: Hi! .*\n\nUser: Tell me a joke\n\nAssistant:$/s);
  });

  test('with a tokenizer: output length is the reply in tokens, chat prompt counts use the chat template', async () => {
    const tokenizer = bpe();
    const [first, second] = await loadPrompts({ kind: 'sharegpt', path: fixture('sharegpt-multiturn.json'), shuffle: false }, 2, { tokenizer, chat: true });
    assert.equal(first!.maxTokens, tokenizer.count('Hi! How can I help you today?'));
    assert.equal(second!.inputTokens, tokenizer.count(tokenizer.renderChat!(second!.messages!)));
    const [completion] = await loadPrompts({ kind: 'sharegpt', path: fixture('sharegpt-multiturn.json'), shuffle: false }, 2, { tokenizer, chat: false });
    assert.equal(completion!.inputTokens, tokenizer.countPrompt('Hello there'));
  });

  test('sampling is reproducible: same seed same order, conversations keep their turn order', async () => {
    const source = (seed: number): PromptSource => ({ kind: 'sharegpt', path: fixture('sharegpt-multiturn.json'), seed });
    const a = await loadPrompts(source(3), 12);
    assert.deepEqual(await loadPrompts(source(3), 12), a);
    const orders = new Set<string>();
    for (let seed = 0; seed < 8; seed++) orders.add((await loadPrompts(source(seed), 4)).map((item) => item.prompt).join('|'));
    assert.ok(orders.size > 1, 'different seeds give different orders');
    const chat = a.slice(0, 4).filter((item) => item.category === 'chat');
    assert.deepEqual(
      chat.map((item) => item.messages?.length ?? 1),
      [1, 3],
    );
  });

  test('bad turns name the entry, turn and field', async () => {
    const dir = join(tmpdir(), `servelab-sharegpt-${process.pid}.json`);
    writeFileSync(
      dir,
      JSON.stringify([
        {
          conversations: [
            { from: 'human', value: 'hi' },
            { from: 'robot', value: 'x' },
          ],
        },
      ]),
    );
    try {
      await assert.rejects(loadPrompts({ kind: 'sharegpt', path: dir }, 1), userError(/entry \[0\] turn 1: field "from" must be one of/));
      writeFileSync(dir, JSON.stringify([{ conversations: [{ from: 'human', value: 3 }] }]));
      await assert.rejects(loadPrompts({ kind: 'sharegpt', path: dir }, 1), userError(/entry \[0\] turn 0: field "value" must be a string/));
    } finally {
      rmSync(dir, { force: true });
    }
  });
});

describe('JSONL, CSV and Parquet records', () => {
  test('JSONL with a field mapping, categories and reference outputs', async (t) => {
    const path = join(scratch(t), 'qa.jsonl');
    writeFileSync(
      path,
      [
        JSON.stringify({ question: 'What is 2 + 2?', answer: 'It is four.', topic: 'math' }),
        JSON.stringify({ question: 'Write a loop', n: 12, topic: 'code' }),
        JSON.stringify({ question: 'Hi', topic: 'chat' }),
      ].join('\n'),
    );
    const fields = { prompt: 'question', output: 'answer', outputTokens: 'n', category: 'topic' };
    const tokenizer = bpe();
    const items = await loadPrompts({ kind: 'jsonl', path, fields, maxOutputTokens: 100 }, 3, { tokenizer, chat: false });
    assert.deepEqual(
      items.map((item) => [item.prompt, item.maxTokens, item.category]),
      [
        ['What is 2 + 2?', tokenizer.count('It is four.'), 'math'],
        ['Write a loop', 12, 'code'],
        ['Hi', 100, 'chat'],
      ],
    );
  });

  test('CSV: header row, quoted multi-line fields, numbers as text', async (t) => {
    const path = join(scratch(t), 'prompts.csv');
    writeFileSync(path, 'prompt,max_tokens,category\n"Explain ""BPE""\nin two lines",32,chat\nSum a list,8,code\n');
    const items = await loadPrompts({ kind: 'csv', path }, 2);
    assert.deepEqual(
      items.map((item) => [item.prompt, item.maxTokens, item.category]),
      [
        ['Explain "BPE"\nin two lines', 32, 'chat'],
        ['Sum a list', 8, 'code'],
      ],
    );
  });

  test('CSV bad rows name file:line and the field', async (t) => {
    const dir = scratch(t);
    const badLength = join(dir, 'bad-length.csv');
    writeFileSync(badLength, 'prompt,max_tokens\nfine,4\nnot fine,lots\n');
    await assert.rejects(
      loadPrompts({ kind: 'csv', path: badLength }, 1),
      userError(/bad-length\.csv:3: field "max_tokens" \(output tokens\) must be a positive integer, got "lots"/),
    );
    const noPrompt = join(dir, 'no-prompt.csv');
    writeFileSync(noPrompt, 'text,max_tokens\nhello,4\n');
    await assert.rejects(loadPrompts({ kind: 'csv', path: noPrompt }, 1), userError(/no-prompt\.csv:2: missing string field "prompt"/));
    const ragged = join(dir, 'ragged.csv');
    writeFileSync(ragged, 'prompt,max_tokens\na,1\nb,2,extra\n');
    await assert.rejects(loadPrompts({ kind: 'csv', path: ragged }, 1), userError(/ragged\.csv:3: not valid CSV/));
  });

  test('Parquet written by a pure-JS writer: mapping, INT64 lengths, categories, reproducible shuffle', async (t) => {
    const path = join(scratch(t), 'prompts.parquet');
    writeParquet(path, [
      { name: 'text', data: ['one', 'two', 'three', 'four', 'five', 'six'], type: 'STRING' },
      { name: 'len', data: [1n, 2n, 3n, 4n, 5n, 6n], type: 'INT64' },
      { name: 'kind', data: ['a', 'b', 'a', 'b', 'a', 'b'], type: 'STRING' },
    ]);
    const fields = { prompt: 'text', outputTokens: 'len', category: 'kind' };
    const inOrder = await loadPrompts({ kind: 'parquet', path, fields }, 6);
    assert.deepEqual(
      inOrder.map((item) => [item.prompt, item.maxTokens, item.category]),
      [
        ['one', 1, 'a'],
        ['two', 2, 'b'],
        ['three', 3, 'a'],
        ['four', 4, 'b'],
        ['five', 5, 'a'],
        ['six', 6, 'b'],
      ],
    );
    const shuffled = await loadPrompts({ kind: 'parquet', path, fields, shuffle: true, seed: 4 }, 6);
    assert.deepEqual(await loadPrompts({ kind: 'parquet', path, fields, shuffle: true, seed: 4 }, 6), shuffled);
    assert.deepEqual(shuffled.map((item) => item.prompt).sort(), inOrder.map((item) => item.prompt).sort());
  });

  test('Parquet bad rows name file, row and field', async (t) => {
    const path = join(scratch(t), 'bad.parquet');
    writeParquet(path, [
      { name: 'prompt', data: ['ok', 'ok too', ''], type: 'STRING' },
      { name: 'max_tokens', data: [4, 0, 4], type: 'INT32' },
    ]);
    await assert.rejects(
      loadPrompts({ kind: 'parquet', path }, 1),
      userError(/bad\.parquet row 2: field "max_tokens" \(output tokens\) must be a positive integer, got 0/),
    );
    await assert.rejects(loadPrompts({ kind: 'parquet', path: fixture('prompts.jsonl') }, 1), userError(/cannot read Parquet dataset .*prompts\.jsonl/));
  });

  test('the experiment-file schema takes formats, field mapping and order', () => {
    assert.deepEqual(promptSourceSchema.parse({ kind: 'csv', path: 'p.csv', fields: { prompt: 'q', category: 'topic' }, shuffle: true }), {
      kind: 'csv',
      path: 'p.csv',
      seed: 0,
      shuffle: true,
      fields: { prompt: 'q', category: 'topic' },
    });
    assert.equal(promptSourceSchema.safeParse({ kind: 'csv', path: 'p.csv', fields: { answer: 'x' } }).success, false);
    assert.equal(promptSourceSchema.safeParse({ kind: 'xlsx', path: 'p.xlsx' }).success, false);
  });
});
