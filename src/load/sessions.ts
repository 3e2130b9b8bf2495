/**
 * Multi-turn sessions: conversations whose every next turn carries the server's own earlier answers, as chat users
 * load an engine (and as its prefix cache sees them: turn k+1 starts with all of turn k, answer included).
 *
 * Why a prompt source and not a workload kind: the load loop's levels (concurrency, sweep) keep their meaning —
 * concurrency is sessions in flight (a session thinking between turns holds its slot, as a user at a keyboard
 * does) and `requests` counts turns — so every workload, report and comparison keeps working unchanged; only the
 * closed loop's unit of work becomes a session (load/session-loop.ts). This module plans the turns (pure): which
 * human text each turn sends, its output length and the think time before it; the conversation is assembled live.
 */
import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import { mulberry32, type Random } from '../util/random.js';
import { type PromptMeasure, promptTokens, shareGptConversations, shuffle } from './datasets/load.js';
import type { PromptItem } from './prompts.js';
import { sampleLength } from './random.js';
import type { ChatMessage, ModelTokenizer } from './tokenizers/model.js';
import type { SessionsSource, ThinkTime } from './types.js';
import { generatedTokens, textOfTokens } from './words.js';

/** Parse `0`, `2s`, `500ms` or `exponential:2s` (mean). */
export function parseThinkTime(text: string): ThinkTime {
  const bad = (): never => {
    throw new UserError(
      `invalid think time "${text}": use a duration (2s, 500ms, 0) or exponential:MEAN (exponential:2s)`,
      'e.g. --think-time 1s or thinkTime: exponential:2s',
      ExitCode.usage,
    );
  };
  const match = /^\s*(?:(fixed|exponential):)?\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(text);
  if (!match) return bad();
  const ms = Number(match[2]) * { ms: 1, s: 1000, m: 60_000 }[(match[3] ?? 's') as 'ms' | 's' | 'm'];
  if (!Number.isFinite(ms)) return bad();
  return match[1] === 'exponential' ? { kind: 'exponential', meanMs: ms } : { kind: 'fixed', ms };
}

/** The text parseThinkTime reads back (remote argv, docs). */
export function thinkTimeText(think: ThinkTime): string {
  return think.kind === 'fixed' ? `${think.ms}ms` : `exponential:${think.meanMs}ms`;
}

export function sampleThinkMs(think: ThinkTime, random: Random): number {
  return think.kind === 'fixed' ? think.ms : -Math.log(1 - random()) * think.meanMs;
}

/** Human turns of each session, in order: generated, or a ShareGPT file's conversations (shuffled by seed, cycled). */
function humanTurns(source: SessionsSource, measure: PromptMeasure): (session: number) => Array<{ text: string; tokens: number }> {
  if (source.path === undefined) {
    const lengths = mulberry32(source.seed);
    const words = mulberry32(source.seed + 0x9e3779b9);
    return () =>
      Array.from({ length: source.turns }, () => {
        const tokens = sampleLength(source.inputTokens, lengths);
        const text = textOfTokens(tokens, words, measure.tokenizer);
        return { text, tokens: generatedTokens(text, tokens, measure) };
      });
  }
  const conversations = shuffle(shareGptConversations({ path: source.path }), source.seed)
    .map(({ messages }) =>
      messages
        .filter((message) => message.role === 'user')
        .map(({ content }) => ({ text: content, tokens: promptTokens(content, [{ role: 'user', content }], measure) })),
    )
    .filter((turns) => turns.length > 0);
  if (conversations.length === 0) {
    throw new UserError(
      `dataset ${source.path} holds no conversation with a human turn`,
      'check the file is ShareGPT ({"conversations": [{"from": "human", ...}]})',
    );
  }
  return (session) => conversations[session % conversations.length]!.slice(0, source.turns);
}

/**
 * The turns of each part (warm-up, levels): whole sessions one after another, the part's last one cut short where
 * its requests run out. Each turn's `prompt` is its human text alone, `session` says where it belongs.
 */
export function sessionTurns(source: SessionsSource, parts: readonly number[], measure: PromptMeasure): PromptItem[] {
  const turnsOf = humanTurns(source, measure);
  const outputs = mulberry32(source.seed + 1);
  const thinks = mulberry32(source.seed + 2);
  const items: PromptItem[] = [];
  let id = 0;
  for (const part of parts) {
    for (let left = part; left > 0; id++) {
      const turns = turnsOf(id).slice(0, left);
      turns.forEach(({ text, tokens }, turn) => {
        const session = { id, turn, thinkMs: turn === 0 ? 0 : sampleThinkMs(source.thinkTime, thinks) };
        items.push({
          prompt: text,
          inputTokens: tokens,
          maxTokens: sampleLength(source.outputTokens, outputs),
          session,
        });
      });
      left -= turns.length;
    }
  }
  return items;
}

/**
 * The conversation as the server gets it for the next turn: chat messages, and for text endpoints one text that
 * extends the previous turn's text (the chat template when the model has one, else `User:` / `Assistant:` labels on
 * every turn, the first included, so a prompt cache can reuse the earlier turn whole).
 */
export function conversationTurn(history: readonly ChatMessage[], turn: PromptItem, measure: PromptMeasure): PromptItem {
  const messages: ChatMessage[] = [...history, { role: 'user', content: turn.prompt }];
  const prompt = conversationText(messages, measure.tokenizer);
  return { ...turn, prompt, messages, inputTokens: promptTokens(prompt, messages, measure) };
}

function conversationText(messages: readonly ChatMessage[], tokenizer?: ModelTokenizer): string {
  if (tokenizer?.renderChat) return tokenizer.renderChat(messages);
  // The answer is appended as streamed (its leading space included): the text grows by exactly what was said.
  let text = '';
  for (const message of messages) text += message.role === 'assistant' ? `${message.content}\n\n` : `User: ${message.content}\n\nAssistant:`;
  return text;
}
