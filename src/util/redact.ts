import { createHmac, randomBytes } from 'node:crypto';

/**
 * The one place that decides what is a secret and how it is hidden. Everything servelab stores (store rows),
 * logs (the `--- servelab launch` header), prints (`show --json`, reports) or serves (`servelab ui`) passes through
 * a Redactor. A secret becomes `<redacted:HMAC>`: a keyed hash (HMAC-SHA256 with the store's random salt, 12 hex)
 * so `servelab diff` still sees that a token changed, while the value cannot be guessed back from a short hash.
 */

/**
 * Names whose values are secrets, matched case-insensitively against env names, JSON keys and CLI flags normalised
 * to ENV style (`--hf-token` → HF_TOKEN). TOKEN, KEY, AUTH and PASS are matched as whole `_` words, not substrings,
 * so tuning knobs such as MAX_NUM_BATCHED_TOKENS, TOKENIZERS_PARALLELISM, AUTHOR or BYPASS_X stay readable, while
 * MY_PASS or DB_PASS_FILE are hidden. A `PER_` word is a unit, not a credential (see `withoutUnits`).
 */
export const DEFAULT_REDACT_PATTERNS: readonly string[] = [
  'TOKEN',
  '*_TOKEN',
  'TOKEN_*',
  '*_TOKEN_*',
  'KEY',
  '*_KEY',
  'KEY_*',
  '*_KEY_*',
  '*APIKEY*',
  'AUTH',
  '*_AUTH',
  'AUTH_*',
  '*_AUTH_*',
  'PASS',
  '*_PASS',
  'PASS_*',
  '*_PASS_*',
  '*AUTHORIZATION*',
  '*SECRET*',
  '*PASSWORD*',
  '*PASSWD*',
  '*CREDENTIAL*',
];

/** Short flags that take a secret value (`-k KEY`, as in llama.cpp-style servers and many API clients). */
const SECRET_SHORT_FLAGS = new Set(['k']);

const MARKER = /^<redacted(:[0-9a-f]{12})?>$/;
/** Values that look like secrets whatever they are called: Hugging Face and OpenAI-style keys. */
const SHAPED_SECRET = /\b(?:hf_[A-Za-z0-9]{16,}|sk-[A-Za-z0-9_-]{16,})\b/g;
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/@:'"]+):([^\s/@'"]+)@/gi;
const BEARER = /\b(Bearer)(\s+)([A-Za-z0-9._~+/=-]{4,})/g;
/** `Authorization: Basic …` / `Token …` / a bare value; "Basic" or "Token" in prose stays readable. */
const AUTHORIZATION = /\b((?:Proxy-)?Authorization["']?\s*[:=]\s*["']?(?:(?:Basic|Token|Bearer)\s+)?)([^\s"',;]+)/gi;
const JSON_PAIR = /(["'])([A-Za-z0-9_.-]+)\1(\s*:\s*)(["'])((?:\\.|(?!\4).)*)\4/g;
const ASSIGNMENT = /(^|[\s;'"])([A-Za-z_][A-Za-z0-9_]*)=([^\s'";]+)/g;
const INLINE_FLAG = /(^|\s)(--?)([A-Za-z][A-Za-z0-9_.-]*)(=|\s+)(?!-)(['"]?)([^\s'"]+)\5/g;

export function globToRegExp(pattern: string, flags = ''): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, flags);
}

/** camelCase and kebab-case to ENV style: `apiKey` → API_KEY, `--hf-token` → HF_TOKEN. */
function envStyle(name: string): string {
  return name
    .replace(/^-+/, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[-.]/g, '_')
    .toUpperCase();
}

/**
 * The name without its `PER_<word>` units: `--prefill-ms-per-token 0.5` is a cost per token, `--requests-per-key` a
 * count per key, so their values stay readable; a credential is named by the word itself (HF_TOKEN, API_KEY).
 */
function withoutUnits(envName: string): string {
  return envName.replace(/(^|_)PER_[A-Z0-9]+(?=_|$)/g, '');
}

export class Redactor {
  private readonly secretName: (name: string) => boolean;

  /**
   * `salt` null: every secret becomes the same `<redacted>`, for hashes that must not depend on any secret.
   * `userPatterns` (an experiment's `fingerprint.redact`) are taken as written, on top of the defaults.
   */
  constructor(
    private readonly salt: string | null,
    readonly userPatterns: readonly string[] = [],
  ) {
    const defaults = DEFAULT_REDACT_PATTERNS.map((pattern) => globToRegExp(pattern, 'i'));
    const user = userPatterns.map((pattern) => globToRegExp(pattern, 'i'));
    this.secretName = (name) => {
      const env = envStyle(name);
      return user.some((regexp) => regexp.test(env)) || defaults.some((regexp) => regexp.test(withoutUnits(env)));
    };
  }

  /** The same salt with extra secret-name patterns (an experiment's `fingerprint.redact`). */
  withPatterns(extra: readonly string[]): Redactor {
    const added = extra.filter((pattern) => !this.userPatterns.includes(pattern));
    return added.length === 0 ? this : new Redactor(this.salt, [...this.userPatterns, ...added]);
  }

  isSecretName(name: string): boolean {
    return this.secretName(name);
  }

  /** The marker for one secret value; a marker stays as it is, so redacting twice changes nothing. */
  value(secret: string): string {
    if (MARKER.test(secret)) return secret;
    if (this.salt === null) return '<redacted>';
    return `<redacted:${createHmac('sha256', this.salt).update(secret).digest('hex').slice(0, 12)}>`;
  }

  /** Free text (a log line, a joined command line, an error message): every secret shape found is replaced. */
  text(text: string): string {
    return text
      .replace(URL_CREDENTIALS, (_m, scheme: string, user: string, password: string) => `${scheme}${user}:${this.value(password)}@`)
      .replace(BEARER, (_m, scheme: string, space: string, secret: string) => `${scheme}${space}${this.value(secret)}`)
      .replace(AUTHORIZATION, (_m, lead: string, secret: string) => `${lead}${this.value(secret)}`)
      .replace(JSON_PAIR, (match, q: string, key: string, colon: string, vq: string, value: string) =>
        this.secretName(key) ? `${q}${key}${q}${colon}${vq}${this.value(value)}${vq}` : match,
      )
      .replace(ASSIGNMENT, (match, lead: string, name: string, value: string) => (this.secretName(name) ? `${lead}${name}=${this.value(value)}` : match))
      .replace(INLINE_FLAG, (match, lead: string, dashes: string, name: string, sep: string, quote: string, value: string) =>
        this.isSecretFlag(dashes, name) ? `${lead}${dashes}${name}${sep}${quote}${this.value(value)}${quote}` : match,
      )
      .replace(SHAPED_SECRET, (secret) => this.value(secret));
  }

  /**
   * An argv: the value of a secret-named flag (`--api-key X`, `--api-key=X`, `-k X`) is replaced, and every
   * argument is also scanned as text (URLs with passwords, `{"api_key": …}` JSON, `hf_…` values). A flag followed
   * by another flag is a boolean and hides nothing.
   */
  args(argv: readonly string[]): string[] {
    const result: string[] = [];
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i]!;
      const flag = /^(--?)([A-Za-z][A-Za-z0-9_.-]*)(=.*)?$/s.exec(arg);
      if (!flag || !this.isSecretFlag(flag[1]!, flag[2]!)) {
        result.push(this.text(arg));
        continue;
      }
      if (flag[3] !== undefined) {
        result.push(`${flag[1]}${flag[2]}=${this.value(flag[3].slice(1))}`);
        continue;
      }
      result.push(arg);
      const next = argv[i + 1];
      if (next !== undefined && !next.startsWith('-')) {
        result.push(this.value(next));
        i++;
      }
    }
    return result;
  }

  /** An environment map: secret-named variables get a marker, every other value is scanned as text. */
  env(env: Readonly<Record<string, string>>): Record<string, string> {
    const result: Record<string, string> = {};
    for (const [name, value] of Object.entries(env)) result[name] = this.secretName(name) ? this.value(value) : this.text(value);
    return result;
  }

  /**
   * Any JSON-shaped value (a stored experiment, a fingerprint, an API response): objects under an `env` key are
   * env maps, arrays of strings are argvs, other strings are text. Other keys are left alone on purpose: structural
   * fields such as `serverKey` would look secret by name.
   */
  deep<T>(value: T): T {
    return this.walk(value, false) as T;
  }

  private walk(value: unknown, envMap: boolean): unknown {
    if (typeof value === 'string') return this.text(value);
    if (Array.isArray(value)) {
      if (value.every((item) => typeof item === 'string')) return this.args(value as string[]);
      return value.map((item) => this.walk(item, false));
    }
    if (value !== null && typeof value === 'object') {
      const result: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) {
        result[key] = envMap && typeof item === 'string' && this.secretName(key) ? this.value(item) : this.walk(item, key === 'env');
      }
      return result;
    }
    return value;
  }

  private isSecretFlag(dashes: string, name: string): boolean {
    return dashes === '-' && name.length === 1 ? SECRET_SHORT_FLAGS.has(name) : dashes === '--' && this.secretName(name);
  }
}

/** Whether a JSON-shaped value holds any redaction marker (then it cannot be replayed as is). */
export function containsMarker(value: unknown): boolean {
  return /<redacted:[0-9a-f]{12}>/.test(JSON.stringify(value));
}

/** Secrets masked alike: for identities (a config's startup-history key) that must neither hold nor hash a secret. */
export const MASKING = new Redactor(null);

/**
 * The process's redactor. It starts with a random salt (markers in logs of a storeless `servelab launch` are
 * still unguessable) and switches to the store's salt when a store is opened (see store/db.ts), so that markers
 * written to one store are comparable across runs and processes.
 */
let active = new Redactor(randomBytes(16).toString('hex'));

export function redactor(): Redactor {
  return active;
}

export function useRedactionSalt(salt: string): void {
  active = new Redactor(salt, active.userPatterns);
}

/**
 * Adds an experiment's `fingerprint.redact` names to the process's redactor, so every sink of the run (store rows,
 * the `--- servelab launch` header, stored command lines, messages, log excerpts) hides them, not only its stored
 * config. Never removed: a process that ran two experiments hides the names of both, which hides more, never less.
 */
export function addRedactionPatterns(patterns: readonly string[]): void {
  active = active.withPatterns(patterns);
}
