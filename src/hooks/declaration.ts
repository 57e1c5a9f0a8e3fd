import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import type { z } from "zod";
import type { HookPoint } from "../sdk/hooks/catalog.js";
import { loopPoint } from "../sdk/hooks/loop-catalog.js";
import type { HookKind } from "./types.js";
import { HOOK_NAME_PATTERN, hookEntrySchema, hooksSchema } from "../config/hooks-schema.js";

export { HOOK_NAME_PATTERN, hookEntrySchema, hooksSchema };

/**
 * The `hooks:` list of the CLI config: what an operator declares, validated completely before
 * anything is imported or contacted. The config file itself only requires `hooks` to be a list,
 * so a one-shot command (`the-loop ask`) can still run, with no hooks, on a declaration that
 * does not load; the daemon refuses to start on one.
 */

/** A `url` entry's default timeout, as the lifecycle-hooks requirement says. */
export const DEFAULT_HOOK_TIMEOUT_SECONDS = 10;
/** A `command` entry's default timeout: agh's for its subprocess hooks, so a hook written for agh keeps its budget. */
export const DEFAULT_COMMAND_TIMEOUT_SECONDS = 5;
/**
 * A variable name that reads as a secret's. agh refuses such a key in a hook's `env` map (its
 * secrets go through secret_env); here a secret stays in the daemon's environment and the
 * operator names it in the list form, so no value in the config file is ever a credential.
 */
const SECRET_LIKE_NAME = /TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|PRIVATE_?KEY|API_?KEY|ACCESS_?KEY|AUTH|COOKIE/i;
/** The variable the-loop sets on every command it runs (src/subprocess/tree.ts): never the operator's to set. */
const RESERVED_ENV = new Set(["THE_LOOP_RUN_ID"]);
export const LOCAL_HOOK_EXTENSIONS = [".js", ".mjs", ".ts"] as const;
/** A package name with an optional subpath: what `module` names, so it never reads as a file. */
const BARE_SPECIFIER = /^(?:@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*(?:\/(?!\.\.?(?:\/|$))[\w.@-]+)*$/i;
/** Request headers that carry credentials: a bearer token comes from tokenEnv, never the file. */
const SECRET_HEADERS = new Set(["authorization", "proxy-authorization", "cookie"]);
/**
 * A header Node can send (RFC 9110 token, field value without CR, LF or NUL). Node refuses any
 * other at each request, so one that passed the load would fail every call — for a required
 * hook, refuse every start — instead of stopping the load where the operator reads the error.
 */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

interface EntryCommon {
  readonly name: string;
  /** Undefined: the default (every point the executor handles). */
  readonly on?: readonly string[];
  readonly required: boolean;
  readonly enabled: boolean;
}

export interface LocalHookEntry extends EntryCommon {
  readonly kind: "module" | "path";
  /** As written: the package specifier, or the path. */
  readonly target: string;
  /** `path`: the absolute file; `module`: the specifier. */
  readonly resolved: string;
  readonly executor?: string;
  readonly options: Readonly<Record<string, unknown>>;
}

export interface RemoteHookEntry extends EntryCommon {
  readonly kind: "url";
  readonly target: string;
  readonly url: URL;
  readonly tokenEnv?: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutSeconds: number;
}

export interface SubprocessHookEntry extends EntryCommon {
  readonly kind: "command";
  /** As written: the first word of `command`. */
  readonly target: string;
  /** `command` with its first word resolved: an absolute path, or a bare name looked up on PATH. */
  readonly argv: readonly string[];
  /** The names of the variables passed beyond the base ones (src/subprocess `BASE_ENV_NAMES`): the list's and the map's. */
  readonly env: readonly string[];
  /** The map form's values, as written; a name here is not read from the daemon's environment. */
  readonly envValues: Readonly<Record<string, string>>;
  readonly timeoutSeconds: number;
  readonly options: Readonly<Record<string, unknown>>;
}

export type HookEntry = LocalHookEntry | RemoteHookEntry | SubprocessHookEntry;

/** A declaration that cannot be loaded; the message names the entry and how to fix it. */
export class HookDeclarationError extends Error {
  override readonly name = "HookDeclarationError";
}

export interface DeclarationContext {
  /** The directory of the config file in effect: `path` entries resolve against it. */
  readonly configDir: string;
  /** The names `on` may use. */
  readonly points: readonly string[];
  readonly homeDir?: string;
}

/** A loopback host: a bearer token sent over plain http:// to it never leaves the machine. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  // Not `*.localhost`: Node asks the resolver for such names, which may answer with any address.
  return host === "localhost" || host === "::1" || /^127(?:\.[0-9]{1,3}){3}$/.test(host);
}

function label(index: number, name: unknown): string {
  return typeof name === "string" && name !== "" ? `hooks[${index}] "${name}"` : `hooks[${index}]`;
}

function resolvePath(path: string, context: DeclarationContext): string {
  if (path === "~" || path.startsWith("~/")) return join(context.homeDir ?? homedir(), path.slice(1));
  return isAbsolute(path) ? resolve(path) : resolve(context.configDir, path);
}

/**
 * The validated entries of `hooks:` (undefined or empty: none). Throws HookDeclarationError
 * naming the first entry that breaks a rule: a missing or duplicate name, none or several of
 * module/path/url/command, an unknown key, a local-only key on a remote entry or the reverse, an `on`
 * naming no point (the valid ones listed), a cleartext URL that would carry a token.
 */
export function parseHookDeclaration(raw: unknown, context: DeclarationContext): HookEntry[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new HookDeclarationError("hooks must be a list of entries (see docs/hooks.md)");
  const seen = new Set<string>();
  return raw.map((item: unknown, index) => {
    const where = label(index, typeof item === "object" && item !== null && "name" in item ? item.name : undefined);
    const parsed = hookEntrySchema.safeParse(item);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const at = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
      const keys = issue?.code === "unrecognized_keys" ? ` (${issue.keys.join(", ")})` : "";
      throw new HookDeclarationError(`${where}: ${at}${issue?.message ?? "invalid entry"}${keys}`);
    }
    const entry = parsed.data;
    if (seen.has(entry.name)) throw new HookDeclarationError(`${where}: the name "${entry.name}" is declared twice; names must be unique`);
    seen.add(entry.name);
    const targets = (["module", "path", "url", "command"] as const).filter((key) => entry[key] !== undefined);
    if (targets.length !== 1) {
      throw new HookDeclarationError(
        `${where}: give exactly one of module, path, url or command${targets.length > 1 ? ` (it has ${targets.join(" and ")})` : ""}`,
      );
    }
    const kind: HookKind = targets[0] ?? "url";
    if (entry.on !== undefined && entry.on.length === 0) {
      // An entry that loads and never runs reads as active — a required compliance gate included.
      throw new HookDeclarationError(
        `${where}: on lists no point, so the hook would never run; name the points it runs at, remove on to run it at every point it handles, or set enabled: false`,
      );
    }
    checkOn(where, entry.on, entry.required === true, context);
    const common = {
      name: entry.name,
      ...(entry.on !== undefined ? { on: [...new Set(entry.on)] } : {}),
      required: entry.required ?? false,
      enabled: entry.enabled ?? true,
    };
    if (kind === "command") return subprocessEntry(where, entry, common, context);
    if (entry.env !== undefined) throw new HookDeclarationError(`${where}: env applies to command entries only, not to a ${kind}`);
    if (kind === "url") {
      for (const key of ["executor", "with"] as const) {
        if (entry[key] !== undefined) throw new HookDeclarationError(`${where}: ${key} applies to module and path entries only, not to a url`);
      }
      return remoteEntry(where, entry, common);
    }
    for (const key of ["tokenEnv", "headers", "timeoutSeconds"] as const) {
      if (entry[key] !== undefined) throw new HookDeclarationError(`${where}: ${key} applies to url entries only, not to a ${kind}`);
    }
    const target = kind === "module" ? (entry.module ?? "") : (entry.path ?? "");
    if (kind === "module" && !BARE_SPECIFIER.test(target)) {
      throw new HookDeclarationError(
        `${where}: module must name an installed package (e.g. acme-hooks or @acme/hooks/lifecycle), not ${target}; use path for a file`,
      );
    }
    if (kind === "path" && !LOCAL_HOOK_EXTENSIONS.some((extension) => target.endsWith(extension))) {
      throw new HookDeclarationError(`${where}: path must name a ${LOCAL_HOOK_EXTENSIONS.join(", ")} file (got ${target})`);
    }
    return {
      ...common,
      kind,
      target,
      resolved: kind === "path" ? resolvePath(target, context) : target,
      ...(entry.executor !== undefined ? { executor: entry.executor } : {}),
      options: entry.with ?? {},
    } satisfies LocalHookEntry;
  });
}

const COMMAND_ONLY_FOR: Readonly<Record<"executor" | "tokenEnv" | "headers", string>> = {
  executor: "module and path entries",
  tokenEnv: "url entries",
  headers: "url entries",
};

function subprocessEntry(where: string, entry: z.output<typeof hookEntrySchema>, common: EntryCommon, context: DeclarationContext): SubprocessHookEntry {
  for (const [key, owners] of Object.entries(COMMAND_ONLY_FOR)) {
    if (entry[key as keyof typeof COMMAND_ONLY_FOR] !== undefined)
      throw new HookDeclarationError(`${where}: ${key} applies to ${owners} only, not to a command`);
  }
  const command = entry.command ?? [];
  const withNul = command.findIndex((word) => word.includes("\0"));
  if (withNul >= 0) throw new HookDeclarationError(`${where}: command[${withNul}] holds a NUL byte, which no program can receive`);
  const [program = "", ...args] = command;
  // A bare name is the PATH's to find; anything naming a file is the operator's folder's, as a `path` is.
  const resolved = program.includes("/") ? resolvePath(program, context) : program;
  const { names, values } = commandEnv(where, entry.env);
  return {
    ...common,
    kind: "command",
    target: program,
    argv: [resolved, ...args],
    env: names,
    envValues: values,
    timeoutSeconds: entry.timeoutSeconds ?? DEFAULT_COMMAND_TIMEOUT_SECONDS,
    options: entry.with ?? {},
  };
}

/**
 * A command's `env` in either form. The list names variables read from the daemon's environment:
 * the operator passes each one, a secret included, by writing its name. The map (agh's form)
 * gives values as written, never expanded, so it can carry no secret of the daemon's; a name
 * that reads as a secret's is refused there, since its value would sit in the config file.
 */
function commandEnv(where: string, env: z.output<typeof hookEntrySchema>["env"]): { names: string[]; values: Record<string, string> } {
  if (env === undefined) return { names: [], values: {} };
  if (Array.isArray(env)) {
    const reserved = env.find((name) => RESERVED_ENV.has(name));
    if (reserved !== undefined) throw new HookDeclarationError(`${where}: env names ${reserved}, which the-loop sets on every command it runs`);
    return { names: [...new Set(env)], values: {} };
  }
  const values: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (RESERVED_ENV.has(name)) throw new HookDeclarationError(`${where}: env sets ${name}, which the-loop sets on every command it runs`);
    if (SECRET_LIKE_NAME.test(name)) {
      throw new HookDeclarationError(
        `${where}: env sets ${name}, which looks like a secret, to a value written in the config file; keep the secret in the-loop's environment and pass it by name with the list form (env: [${name}])`,
      );
    }
    if (value.includes("\0")) throw new HookDeclarationError(`${where}: env.${name} holds a NUL byte, which no environment can carry`);
    values[name] = value;
  }
  return { names: Object.keys(values), values };
}

/**
 * The `on` rules: every name an exact point (the loop family has no wildcards: `loop.*` names
 * nothing), and `required: true` never on an entry that runs only at loop events, where a failing
 * hook never denies — an operator reading `required` there would expect what the family refuses.
 */
function checkOn(where: string, on: readonly string[] | undefined, required: boolean, context: DeclarationContext): void {
  if (on === undefined) return;
  for (const point of on) {
    if (context.points.includes(point)) continue;
    if (/[*?[\]{}]/.test(point)) {
      const loop = point.startsWith("loop.");
      const valid = loop ? context.points.filter(isLoopPointName) : context.points;
      throw new HookDeclarationError(
        `${where}: on names "${point}", a pattern; on takes exact names, no wildcards, so list each one: the ${loop ? "loop events" : "points"} are ${valid.join(", ")}`,
      );
    }
    throw new HookDeclarationError(`${where}: on names "${point}", which is not a hook point; the points are ${context.points.join(", ")}`);
  }
  if (required && on.every(isLoopPointName)) {
    throw new HookDeclarationError(
      `${where}: required: true on an entry that runs only at loop events (${on.join(", ")}); the loop family is fail-open, so a failing hook never denies there; remove required (a hook denies by answering denied: true)`,
    );
  }
}

function isLoopPointName(name: string): boolean {
  return loopPoint(name) !== undefined;
}

/**
 * The points an entry without `on` runs at: every point but the opt-in ones (the loop family),
 * which reach only an entry whose `on` names them.
 */
export function pointsWithoutOn<P extends HookPoint>(points: readonly P[]): P[] {
  return points.filter((point) => point.optIn !== true);
}

function remoteEntry(where: string, entry: z.output<typeof hookEntrySchema>, common: EntryCommon): RemoteHookEntry {
  const text = entry.url ?? "";
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new HookDeclarationError(`${where}: url "${text}" is not a valid URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new HookDeclarationError(`${where}: url must be https:// (or http:// to a loopback host), not ${url.protocol}`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new HookDeclarationError(`${where}: url must not carry credentials; name the token's variable in tokenEnv`);
  }
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname) && entry.tokenEnv !== undefined) {
    throw new HookDeclarationError(
      `${where}: url ${url.origin} is plain http:// to a host that is not loopback, and a bearer token (tokenEnv) would travel in clear; use https://`,
    );
  }
  for (const [header, value] of Object.entries(entry.headers ?? {})) {
    if (!HEADER_NAME.test(header))
      throw new HookDeclarationError(
        `${where}: header name "${header}" is not a valid HTTP header name; write the name alone (letters, digits, -), without spaces or a colon`,
      );
    if (SECRET_HEADERS.has(header.toLowerCase())) {
      throw new HookDeclarationError(`${where}: headers must not carry ${header}; put the token in an environment variable named by tokenEnv`);
    }
    if (!HEADER_VALUE.test(value))
      throw new HookDeclarationError(
        `${where}: header "${header}" has a value HTTP cannot carry (a line break, a control character, or a character beyond Latin-1)`,
      );
  }
  return {
    ...common,
    kind: "url",
    target: text,
    url,
    ...(entry.tokenEnv !== undefined ? { tokenEnv: entry.tokenEnv } : {}),
    headers: entry.headers ?? {},
    timeoutSeconds: entry.timeoutSeconds ?? DEFAULT_HOOK_TIMEOUT_SECONDS,
  };
}
