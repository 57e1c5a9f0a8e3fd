import { z } from "zod";

/**
 * The schema of one `hooks:` entry, as an operator writes it. It lives with the config because
 * the config's published JSON Schema includes it; what loading an entry means (resolving paths,
 * the rules between keys) is the hook engine's (src/hooks/declaration.ts).
 */

export const HOOK_NAME_PATTERN = /^[a-z][a-z0-9-]*$/;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const jsonValue: z.ZodType<unknown> = z.lazy(() =>
  z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(jsonValue), z.record(z.string(), jsonValue)]),
);

export const hookEntrySchema = z
  .strictObject({
    name: z
      .string()
      .regex(HOOK_NAME_PATTERN, "lowercase letters, digits and '-', starting with a letter")
      .describe("The entry's name, unique in the list; events and refusal comments name the hook by it."),
    module: z
      .string()
      .min(1)
      .optional()
      .describe("An installed package (or a subpath of one) exporting a LifecycleHooks subclass, resolved from the config file's directory."),
    path: z
      .string()
      .min(1)
      .optional()
      .describe(
        "A .js, .mjs or .ts file exporting a LifecycleHooks subclass: absolute, ~-relative, or relative to the config file's directory (never a checkout).",
      ),
    url: z.string().min(1).optional().describe("A remote JSON-RPC 2.0 endpoint: https://, or http:// to a loopback host."),
    command: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        "A program run once per point, as argv (never a shell): the payload as JSON on stdin, the context patch as JSON on stdout. A first word with a / is relative to the config file's directory (never a checkout); a bare name is looked up on PATH.",
      ),
    executor: z.string().min(1).optional().describe("Local entries: the export to use, when the module exports several LifecycleHooks subclasses."),
    with: z
      .record(z.string(), jsonValue)
      .optional()
      .describe("Local entries: the options object handed to the executor's constructor; command entries: the `with` of every payload."),
    env: z
      .union([
        z.array(z.string().regex(ENV_NAME, "an environment variable name")),
        // agh's form: the values themselves, taken as written (never expanded from the daemon's environment).
        z.record(z.string().regex(ENV_NAME, "an environment variable name"), z.string()),
      ])
      .optional()
      .describe(
        "Command entries: the variables passed to the command beyond PATH, HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE, TMPDIR and TZ — a list of names (each read from the daemon's environment), or a map of names to values taken as written (agh's form; a name that looks like a secret is refused there). Nothing else of the daemon's environment is passed.",
      ),
    tokenEnv: z
      .string()
      .regex(ENV_NAME, "an environment variable name")
      .optional()
      .describe("Remote entries: the environment variable whose value is sent as `Authorization: Bearer …`, read at each call."),
    headers: z.record(z.string(), z.string()).optional().describe("Remote entries: extra, non-secret request headers."),
    timeoutSeconds: z
      .number()
      .positive()
      .max(600)
      .optional()
      .describe(
        "Remote and command entries: how long one call may take (default 10 for a url, 5 for a command, as agh's subprocess hooks); a command still running then is stopped.",
      ),
    on: z
      .array(z.string())
      .optional()
      .describe("The points the entry runs at (default: every point a local executor overrides; every point for a remote or command one)."),
    required: z.boolean().optional().describe("When true, a failure at a point with `proceed` refuses the operation (default false)."),
    enabled: z.boolean().optional().describe("false keeps the entry declared but never runs it (default true)."),
  })
  .describe("One lifecycle hook executor: exactly one of module, path, url or command.");

export const hooksSchema = z.array(hookEntrySchema).describe("Lifecycle hooks, run in this order at the points they handle (see docs/hooks.md).");
