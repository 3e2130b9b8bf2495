/** Dataset file formats servelab reads prompts from. */
export const DATASET_FORMATS = ['sharegpt', 'jsonl', 'csv', 'parquet'] as const;
export type DatasetFormat = (typeof DATASET_FORMATS)[number];

/**
 * Which record field holds what. Defaults: prompt "prompt", output "output" (reference reply text: its token count
 * is the request's output length), outputTokens "max_tokens" (an explicit output length), category "category",
 * conversations "conversations" (ShareGPT).
 */
export interface DatasetFields {
  prompt?: string;
  output?: string;
  outputTokens?: string;
  category?: string;
  conversations?: string;
}

export interface DatasetSource {
  kind: DatasetFormat;
  path: string;
  /** Seed of the shuffled order (default 0). */
  seed?: number;
  /** Shuffle the requests (reproducibly, by seed); default true for ShareGPT, false (file order) otherwise. */
  shuffle?: boolean;
  maxOutputTokens?: number;
  fields?: DatasetFields;
}
