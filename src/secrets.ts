/**
 * The secret values this process holds — a remote hook's bearer token, the GitHub token, the
 * webhook secret — and the one redactor every sink runs text through before it leaves the
 * process or lands under the state root: the event log, the records, what is posted on a work
 * item, the CLI's output.
 *
 * Process-wide on purpose. A secret is known where it is read (at a hook call, a GitHub request,
 * the webhook receiver's start), and text quoting it — a failing hook's error, a refusal's
 * reason — travels far from there before it is written; a redactor handed down to every sink
 * would miss the one sink nobody handed it to. Code that reads a secret calls `rememberSecret`;
 * every sink calls `redactKnownSecrets` (text) or `redactKnownSecretsIn` (a JSON value).
 *
 * A server or a hook rarely echoes a value as it was sent: it comes back JSON-escaped (once, or
 * twice when a JSON document is quoted inside another), URL-encoded, or in base64 (a Basic
 * authorization header). Each of these spellings is redacted, not only the raw value.
 *
 * Stands on the ground floor (beside errors.ts) and imports nothing, so the event log and the
 * record store, which stand on one floor and cannot import each other, both reach it.
 */

export const REDACTED = "[redacted]";

/**
 * A value shorter than this is redacted only where a whole string is that value, never as a part
 * of a longer one: a short value occurs by chance in ordinary text (a number, a word, a piece of
 * a timestamp), and redacting every occurrence would mangle messages and, by where the marks
 * fall, spell out the value it was meant to hide. Tokens and webhook secrets are far longer.
 */
export const MIN_SUBSTRING_SECRET = 8;

/**
 * Distinct values kept: a token read at each call (a rotated one) adds a value per rotation. The
 * oldest is dropped past this, so a variable that changes at every read cannot grow the set
 * without end.
 */
const MAX_SECRETS = 64;

/** `text` as it reads inside a JSON string, without the quotes. */
function jsonEscaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/** Percent-escapes with lower-case hex digits, as some encoders write them. */
function lowerHexEscapes(text: string): string {
  return text.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase());
}

/** An encoding of `value`, or nothing when it cannot encode it (a lone surrogate makes encodeURI throw). */
function encodedOrNone(encode: (value: string) => string, value: string): string[] {
  try {
    return [encode(value)];
  } catch {
    return [];
  }
}

function base64Url(text: string): string {
  return text.replaceAll("+", "-").replaceAll("/", "_");
}

/**
 * The base64 characters that spell `value` wherever it sits inside a longer encoded text (the
 * `token` of `Basic base64("user:token")`): base64 encodes three bytes as four characters, so
 * the characters depend on where the value starts modulo three. For each of the three offsets,
 * the characters made of the value's bits alone — the edge characters, which mix in the bytes
 * before and after, are left out (they carry a few bits, not the value).
 */
function base64Cores(value: string): string[] {
  const bytes = Buffer.from(value, "utf8");
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes])
      .toString("base64")
      .replace(/=+$/, "");
    const first = Math.ceil((offset * 8) / 6);
    const end = Math.floor(((offset + bytes.length) * 8) / 6);
    const core = encoded.slice(first, end);
    cores.push(core, base64Url(core));
  }
  return cores;
}

/**
 * Every spelling of `value` that is redacted: as is; JSON-escaped, once and twice (the text of a
 * JSON string inside a JSON string), and with `\/` for `/` as some encoders write it;
 * URL-encoded (encodeURIComponent, encodeURI, application/x-www-form-urlencoded with `+` for a
 * space, with upper- and lower-case hex); base64 (padded, unpadded, URL-safe, and inside a longer
 * encoded text). Longest first, so a longer spelling is redacted whole.
 */
export function secretSpellings(value: string): string[] {
  const json = jsonEscaped(value);
  const component = encodedOrNone(encodeURIComponent, value);
  const encoded = [
    ...component,
    ...component.map((text) => text.replaceAll("%20", "+")),
    ...encodedOrNone(encodeURI, value),
    new URLSearchParams([["", value]]).toString().slice(1),
  ];
  const base64 = Buffer.from(value, "utf8").toString("base64");
  const spellings = new Set([
    value,
    json,
    jsonEscaped(json),
    json.replaceAll("/", "\\/"),
    ...encoded,
    ...encoded.map(lowerHexEscapes),
    base64,
    base64Url(base64),
    ...base64Cores(value),
  ]);
  return [...spellings].filter((spelling) => spelling.length >= MIN_SUBSTRING_SECRET).sort((a, b) => b.length - a.length);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object") return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A set of secret values and the redaction of their spellings. */
export class SecretRedactor {
  private readonly values: string[] = [];
  /** Values too short to redact inside longer text: a string that is one of them whole is redacted. */
  private readonly whole = new Set<string>();
  private pattern: RegExp | undefined;
  /** The length of the shortest spelling the pattern matches. */
  private shortest = 0;
  private stale = false;

  /** Whether any value is known: with none, redaction costs nothing. */
  get empty(): boolean {
    return this.values.length === 0;
  }

  /** Adds a value; undefined and the empty string are no secret. */
  remember(value: string | undefined): void {
    if (value === undefined || value === "" || this.values.includes(value)) return;
    this.values.push(value);
    if (this.values.length > MAX_SECRETS) this.values.shift();
    this.stale = true;
  }

  /** Forgets every value (for a test that wants a clean process). */
  clear(): void {
    this.values.length = 0;
    this.whole.clear();
    this.pattern = undefined;
    this.stale = false;
  }

  /** `text` with every spelling of every known value replaced by "[redacted]". */
  redact(text: string): string {
    if (this.values.length === 0 || text === "") return text;
    if (this.stale) this.rebuild();
    if (this.whole.has(text)) return REDACTED;
    // A text shorter than every spelling holds none of them (most event fields: ids, names, actions).
    return this.pattern === undefined || text.length < this.shortest ? text : text.replace(this.pattern, REDACTED);
  }

  /**
   * A copy of a JSON value with every string redacted, object keys included (a hook's field
   * names are reported by name). Returns `value` itself when nothing is known.
   */
  redactIn<T>(value: T): T {
    if (this.values.length === 0) return value;
    return this.redactValue(value) as T;
  }

  private redactValue(value: unknown): unknown {
    if (typeof value === "string") return this.redact(value);
    if (Array.isArray(value)) return value.map((item) => this.redactValue(item));
    if (isPlainObject(value)) {
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [this.redact(key), this.redactValue(item)]));
    }
    return value;
  }

  private rebuild(): void {
    this.stale = false;
    this.whole.clear();
    const spellings = new Set<string>();
    for (const value of this.values) {
      if (value.length < MIN_SUBSTRING_SECRET) this.whole.add(value);
      else for (const spelling of secretSpellings(value)) spellings.add(spelling);
    }
    const ordered = [...spellings].sort((a, b) => b.length - a.length);
    this.pattern = ordered.length === 0 ? undefined : new RegExp(ordered.map(escapeRegExp).join("|"), "g");
    this.shortest = ordered.at(-1)?.length ?? 0;
  }
}

/** The secrets of this process. */
const known = new SecretRedactor();

/** Called where a secret value is read, so that no sink of this process writes it. */
export function rememberSecret(value: string | undefined): void {
  known.remember(value);
}

/** Whether this process knows any secret: with none, a sink may skip redacting (it would change nothing). */
export function anySecretKnown(): boolean {
  return !known.empty;
}

/** `text` with every known secret, in every spelling, replaced by "[redacted]". */
export function redactKnownSecrets(text: string): string {
  return known.redact(text);
}

/** A copy of a JSON value with every string redacted (`value` itself when no secret is known). */
export function redactKnownSecretsIn<T>(value: T): T {
  return known.redactIn(value);
}

/** Forgets the process's secrets: for tests only. */
export function forgetKnownSecrets(): void {
  known.clear();
}
