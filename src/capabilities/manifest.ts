import { z } from "zod";
import { LOOP_POINTS } from "../graph/types.js";
import type { LoopPoint } from "../graph/types.js";

/**
 * A capability's manifest (`capability.yaml` or `capability.json` at the root of its bundle): what
 * it adds at the loop points. This file is the rules one manifest meets on its own; the rules
 * across installed capabilities and the bundle's files are in load.ts.
 *
 * Two formats load (docs/capabilities.md, "The manifest"): gsd-core's, as gsd-core documents and
 * validates it (told by its `role`), and the-loop's earlier one (no `role`), which still loads.
 * Both become the same manifest. gsd-core's keys keep gsd-core's meaning; what gsd-core requires
 * is required of a manifest with a `role`, and what its validator refuses is refused here too.
 *
 * Everything here comes from a third party. A `ref.command` or `check.query` that is not a
 * command's words is NOT refused — gsd-core's own queries are dotted (`ui.plan-gate`), and the
 * contract handles such a value at dispatch (warned, never run, routed by `onError`) — so consent
 * warns about it (consent.ts) and dispatch holds it to the pattern again (dispatch.ts).
 */

export { LOOP_POINTS } from "../graph/types.js";
export type { LoopPoint } from "../graph/types.js";

import { COMMAND_HINT, COMMAND_RE, CONFIG_KEY_RE, DEFAULT_COMMAND_TIMEOUT_MS, GSD_VERSION, KEBAB_RE, MAX_COMMAND_TIMEOUT_MS } from "./manifest-words.js";
import { MAX_RESOLVER_TIMEOUT_MS, RESERVED_ID_PREFIXES, TASK_ID_PLACEHOLDER, rolesAt } from "./manifest-words.js";

export {
  AGENT_ROLES,
  CAPABILITY_SCHEMA_FILE,
  COMMAND_PATTERN,
  CONFIG_KEY_PATTERN,
  DEFAULT_COMMAND_TIMEOUT_MS,
  GSD_VERSION,
  KEBAB_PATTERN,
  MANIFEST_FILES,
  MAX_COMMAND_TIMEOUT_MS,
  MAX_RESOLVER_TIMEOUT_MS,
  RESERVED_ID_PREFIXES,
  TASK_ID_PLACEHOLDER,
  isCommandWords,
} from "./manifest-words.js";

const RESERVED_NAMES = new Set(["__proto__", "constructor", "prototype"]);
const kebab = (what: string) => z.string().max(64).regex(KEBAB_RE, `${what} is one kebab word: lowercase letters, digits and '-', starting with a letter`);
const commandWords = () => z.string().max(200).regex(COMMAND_RE, `not a command: ${COMMAND_HINT}`);
const point = () => z.enum(LOOP_POINTS).describe("The loop point, one of discuss:pre … ship:post.");
const onError = () => z.enum(["skip", "halt"], 'onError is "skip" or "halt"');
const configKey = (what: string) =>
  z
    .string()
    .regex(CONFIG_KEY_RE, `${what} is a config key: dotted words, such as workflow.tdd_mode`)
    .refine((key) => !key.split(".").some((segment) => RESERVED_NAMES.has(segment)), `${what} may not hold __proto__, constructor or prototype`);
const when = () =>
  configKey("when").optional().describe("A key of the capability's config: the hook is active only while its value is truthy (gsd-core's Boolean()).");
const nonEmpty = (what: string) => z.string().min(1, `${what} is empty`);
const artifacts = (what: string) =>
  z.array(z.string(), `${what} is an array of artifact names`).describe("Artifact names, relative to the phase: what orders hooks at a point.");

/** Exactly one key of `keys` is set: a union of strict objects would explain a mistake less well. */
function exactlyOne(keys: readonly string[], what: string) {
  return (value: Record<string, unknown>, context: z.RefinementCtx): void => {
    const set = keys.filter((key) => value[key] !== undefined);
    if (set.length !== 1) {
      context.addIssue({
        code: "custom",
        message: `${what} sets exactly one of ${keys.join(", ")}${set.length > 1 ? ` (it sets ${set.join(" and ")})` : ""}`,
      });
    }
  };
}

/** The-loop's own command: words the-loop runs as an argv, never through a shell. */
const loopCommandSchema = z
  .strictObject({
    name: commandWords().describe("The command's words: `the-loop <name> …` runs it; a step's `ref.command` or a gate's `check.query` names it."),
    argv: z
      .array(nonEmpty("an argv element"))
      .min(1, "argv is empty: give the program and its arguments")
      .describe("The program and its arguments, run from inside the bundle, never through a shell; a relative program with a '/' is a file in the bundle."),
    description: z.string().optional(),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .max(MAX_COMMAND_TIMEOUT_MS, `timeoutMs is at most ${MAX_COMMAND_TIMEOUT_MS} (an hour)`)
      .optional()
      .describe(`How long the command may run before it is stopped (default ${DEFAULT_COMMAND_TIMEOUT_MS}: ten minutes).`),
  })
  .describe("A command the capability provides to the-loop (the-loop's extension of gsd-core's commands[]).");

/** gsd-core's command family: a CommonJS module gsd-core's own process loads. The-loop never loads it. */
const commandModuleSchema = z
  .strictObject({
    family: nonEmpty("family").refine((family) => !RESERVED_NAMES.has(family), "family may not be __proto__, constructor or prototype"),
    module: z.string().regex(/^[A-Za-z0-9._-]+\.cjs$/, "module is a bare file name ending in .cjs (no '/', no '..')"),
    router: nonEmpty("router"),
    subcommands: z.array(nonEmpty("a subcommand")).optional(),
  })
  .describe("gsd-core's command module ({family, module, router}): shown at consent, never loaded by the-loop.");

const commandEntrySchema = z.union([loopCommandSchema, commandModuleSchema], "a command is the-loop's {name, argv} or gsd-core's {family, module, router}");

const refSchema = z
  .strictObject({
    skill: kebab("a skill")
      .refine((skill) => !skill.startsWith("gsd-"), "a skill is its stem: the dispatcher prepends gsd-, so it may not start with gsd-")
      .optional(),
    agent: kebab("an agent").optional(),
    command: z
      .string()
      .optional()
      .describe("A command an installed capability declares; a value that is not a command's words is warned about at consent and never run."),
  })
  .superRefine(exactlyOne(["skill", "agent", "command"], "a ref"))
  .describe("What the step dispatches: exactly one of skill, agent, command.");

const fragmentSchema = z
  .strictObject({
    inline: nonEmpty("fragment.inline").optional(),
    path: nonEmpty("fragment.path").optional().describe("A file inside the bundle, relative to it: its text is inlined at load."),
    file: nonEmpty("fragment.file").optional().describe("The-loop's earlier name of path."),
  })
  .superRefine((fragment, context) => {
    if (fragment.path !== undefined && fragment.file !== undefined)
      context.addIssue({ code: "custom", message: "a fragment sets path or file (its earlier name), not both" });
    if (fragment.inline === undefined && fragment.path === undefined && fragment.file === undefined)
      context.addIssue({ code: "custom", message: 'a fragment has a "path" or an "inline" key' });
  })
  .transform(({ inline, path, file }) => ({
    ...(inline !== undefined ? { inline } : {}),
    ...((path ?? file) !== undefined ? { path: (path ?? file) as string } : {}),
    ...(file !== undefined ? { legacyFile: true } : {}),
  }));

const stepSchema = z
  .strictObject({
    point: point(),
    ref: refSchema,
    produces: artifacts("produces").optional(),
    consumes: artifacts("consumes").optional(),
    onError: onError().optional().describe("skip: warn and continue; halt: stop the point. A step never blocks by its result."),
    when: when(),
    fragment: fragmentSchema.optional(),
    supportsReviewerLanes: z.boolean().optional(),
  })
  .describe("An advisory unit of work at a loop point.");

const contributionSchema = z
  .strictObject({
    point: point(),
    into: kebab("a role").describe("The agent role whose prompt the fragment goes into, such as orchestrator or planner."),
    produces: artifacts("produces").optional(),
    consumes: artifacts("consumes").optional(),
    fragment: fragmentSchema,
    when: when(),
    onError: onError().optional(),
    configValues: z
      .record(z.string(), configKey("a configValues key"))
      .optional()
      .describe("alias → a config key: the values are resolved and attached to the active hook."),
  })
  .describe("Text that goes verbatim into a role's prompt at a loop point.");

const artifact = () => nonEmpty("artifact").describe("A file the work item's run produces, relative to its working directory.");
/** The predicates the-loop's evaluator knows (predicate.ts); a gate may name another, which then fails as a check. */
export const predicateSchema = z
  .discriminatedUnion("kind", [
    z.strictObject({ kind: z.literal("artifact-exists"), artifact: artifact() }),
    z.strictObject({ kind: z.literal("checklist-complete"), artifact: artifact() }),
    z.strictObject({
      kind: z.literal("artifact-frontmatter-equals"),
      artifact: artifact(),
      field: nonEmpty("field"),
      equals: z.union([z.string(), z.number(), z.boolean()]),
    }),
    z.strictObject({
      kind: z.literal("command-exit-zero"),
      argv: z.array(nonEmpty("an argv element")).min(1, "argv is empty").describe("Run without a shell; exit 0 passes."),
    }),
  ])
  .describe("A check the-loop's predicate evaluator knows.");

const checkSchema = z
  .strictObject({
    query: z
      .string()
      .optional()
      .describe("A command an installed capability declares; it prints {block, message?}. A value that is not a command's words is never run."),
    predicate: z.record(z.string(), z.unknown()).optional().describe("A predicate object; one the-loop's evaluator does not know fails as a check."),
    agentVerdict: z.looseObject({ ref: z.string().optional(), prompt: z.string().optional() }).optional().describe("An agent's judgement: never blocking."),
  })
  .superRefine(exactlyOne(["query", "predicate", "agentVerdict"], "a check"));

const gateSchema = z
  .strictObject({
    point: point(),
    check: checkSchema,
    blocking: z.boolean("blocking is a boolean").describe("true: a block stops the step; false: the message is surfaced and the loop goes on."),
    onError: onError().describe("When the check itself fails: skip continues with a warning, halt stops."),
    message: nonEmpty("message").optional().describe("The-loop's extension: what a block says besides the check's own message."),
    when: when(),
  })
  .superRefine((gate, context) => {
    if (gate.blocking && gate.check.agentVerdict !== undefined) {
      context.addIssue({
        code: "custom",
        path: ["blocking"],
        message: "an agentVerdict check may not be blocking (a non-deterministic check may not halt the loop); set blocking: false or use a query or predicate",
      });
    }
  })
  .describe("A check at a loop point that may stop the step.");

const resolverSchema = z
  .strictObject({
    trackerPrefix: kebab("a trackerPrefix").describe(
      "Tracker ids `<prefix>:<id>` (gsd-core's plans) and task ids `<prefix>-<rest>` (the-loop's checklists) belong to this resolver; unique across installed capabilities.",
    ),
    invoke: z.strictObject({
      binary: nonEmpty("binary").describe("The program: a name on PATH, an absolute path, or a file in the bundle."),
      args: z
        .array(z.string())
        .refine((args) => args.includes(TASK_ID_PLACEHOLDER), `args holds the exact element "${TASK_ID_PLACEHOLDER}", which the task id replaces`),
      timeoutMs: z.number().int().positive().max(MAX_RESOLVER_TIMEOUT_MS, `timeoutMs is at most ${MAX_RESOLVER_TIMEOUT_MS}`),
    }),
  })
  .describe("Resolves a task's content for execute:task: a bounded subprocess whose failure halts the task.");

const configScalar = z.union([z.boolean(), z.string(), z.number()]);
const configEntrySchema = z
  .strictObject({
    type: z.enum(["boolean", "string", "number", "enum"], 'type is one of "boolean", "string", "number", "enum"'),
    default: configScalar,
    description: nonEmpty("description"),
    values: z.array(z.string()).min(1, "values is a non-empty array of strings").optional(),
  })
  .superRefine((entry, context) => {
    const expected = entry.type === "enum" ? "string" : entry.type;
    if (typeof entry.default !== expected)
      context.addIssue({ code: "custom", path: ["default"], message: `default must be a ${expected} for type "${entry.type}"` });
    if (typeof entry.default === "number" && !Number.isFinite(entry.default))
      context.addIssue({ code: "custom", path: ["default"], message: "default must be a finite number" });
    if (entry.type === "enum" && entry.values === undefined)
      context.addIssue({ code: "custom", path: ["values"], message: 'type "enum" requires a non-empty "values" array of strings' });
    if (entry.type === "enum" && entry.values !== undefined && !entry.values.includes(String(entry.default))) {
      context.addIssue({
        code: "custom",
        path: ["default"],
        message: `default "${String(entry.default)}" is not one of the values [${entry.values.join(", ")}]`,
      });
    }
    if (entry.type !== "enum" && entry.values !== undefined)
      context.addIssue({ code: "custom", path: ["values"], message: 'values belongs to type "enum" only' });
  });

/** A config key's declaration: gsd-core's `{type, default, description, values?}`, or the-loop's earlier bare default. */
export interface ConfigEntry {
  readonly type: "boolean" | "string" | "number" | "enum";
  readonly default: boolean | string | number;
  readonly description?: string;
  readonly values?: readonly string[];
}

const SAFE_HOOK_SCRIPT_RE = /^[A-Za-z0-9._/-]+$/;
const hookSchema = z
  .strictObject({
    event: nonEmpty("event"),
    script: z
      .string()
      .refine(
        (script) =>
          SAFE_HOOK_SCRIPT_RE.test(script) && !script.startsWith("/") && !script.split("/").some((segment) => segment === ".." || segment.startsWith("-")),
        "script is a relative path of [A-Za-z0-9._/-] only: no whitespace or shell metacharacters, no leading '-', no absolute path, no '..'",
      ),
    matcher: z
      .string()
      .min(1, "matcher is empty")
      .refine((matcher) => ![...matcher].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f), "matcher holds a control character")
      .optional(),
  })
  .describe("gsd-core's host-runtime hook ({event, script, matcher?}): shown at consent, never run by the-loop.");

const runtimeCompatSchema = z
  .strictObject({
    supported: z.array(z.string()).min(1, 'supported is a non-empty array of runtime ids, or ["*"]'),
    unsupported: z.array(z.string()),
    notes: z.record(z.string(), nonEmpty("a note")).optional(),
  })
  .superRefine((compat, context) => {
    const check = (field: "supported" | "unsupported", allowWildcard: boolean): void => {
      const ids = compat[field];
      ids.forEach((id, index) => {
        if (id === "*") {
          if (!allowWildcard) context.addIssue({ code: "custom", path: [field, index], message: `${field} may not hold the wildcard "*"` });
        } else if (!KEBAB_RE.test(id) || RESERVED_NAMES.has(id)) {
          context.addIssue({ code: "custom", path: [field, index], message: 'a runtime id is a kebab word, or "*"' });
        }
      });
      if (ids.includes("*") && ids.length > 1)
        context.addIssue({ code: "custom", path: [field], message: 'the wildcard "*" cannot be mixed with runtime ids' });
    };
    check("supported", true);
    check("unsupported", false);
  });

const SEMVER_RE =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;
const RANGE_RE = /^[0-9A-Za-z.\-+ |<>=~^*()]+$/;
const plausibleRange = (range: string): boolean => range.trim() !== "" && RANGE_RE.test(range) && (/\d/.test(range) || ["*", "x", "X"].includes(range.trim()));
const openObject = () => z.record(z.string(), z.unknown());

const ROLES = ["feature", "runtime", "reviewer"] as const;

const manifestObject = z.strictObject({
  $schema: z.string().optional(),
  id: kebab("an id")
    .refine(
      (id) => !RESERVED_ID_PREFIXES.some((prefix) => id.startsWith(prefix)),
      `an id may not begin with ${RESERVED_ID_PREFIXES.join(", ")}: gsd-core keeps them for its first-party capabilities`,
    )
    .describe("The capability's id."),
  role: z
    .enum(ROLES, 'role is one of "feature", "runtime", "reviewer"')
    .optional()
    .describe("gsd-core's body selector; a manifest without one is in the-loop's earlier format."),
  version: z.string().regex(SEMVER_RE, "a version is semver, such as 1.2.0").describe("Semver."),
  title: nonEmpty("title").optional(),
  description: nonEmpty("description"),
  tier: z.enum(["core", "standard", "full"], 'tier is one of "core", "standard", "full"').optional(),
  requires: z.array(kebab("a required capability")).optional().describe("Ids of capabilities that must be installed too."),
  engines: z.strictObject({ gsd: z.string().refine(plausibleRange, "engines.gsd is a semver range, such as >=1.6.0").optional() }).optional(),
  runtimeCompat: runtimeCompatSchema.optional(),
  compatVersions: z
    .record(z.string().regex(SEMVER_RE, "a compatVersions key is a semver version"), z.string().refine(plausibleRange, "a semver range"))
    .optional(),
  integrity: z
    .string()
    .regex(/^sha512-[A-Za-z0-9+/]{86}==$/, 'integrity is "sha512-<base64>"')
    .optional(),
  provenance: z.strictObject({ sourceRepo: nonEmpty("sourceRepo"), commit: nonEmpty("commit") }).optional(),
  author: z.looseObject({ name: nonEmpty("author.name"), email: z.string().optional(), url: z.string().optional() }).optional(),
  homepage: z.string().optional(),
  repository: z.string().optional(),
  license: z.string().optional(),
  keywords: z.array(z.string()).optional(),
  skills: z.array(z.string().refine((name) => !RESERVED_NAMES.has(name), "a reserved name")).optional(),
  agents: z.array(z.string().refine((name) => !RESERVED_NAMES.has(name), "a reserved name")).optional(),
  hooks: z.array(hookSchema).optional(),
  config: z
    .record(configKey("a config key"), z.union([configEntrySchema, configScalar]))
    .optional()
    .describe("The capability's config slice: each key as gsd-core's {type, default, description, values?} (or the-loop's earlier bare default)."),
  activationKey: configKey("activationKey").optional().describe("A key of the config: the capability is active only while it is truthy."),
  commands: z.array(commandEntrySchema).optional(),
  mcpServers: z
    .union([openObject(), z.array(z.unknown())])
    .optional()
    .describe("gsd-core's MCP servers: shown at consent, never started by the-loop."),
  steps: z.array(stepSchema).optional(),
  contributions: z.array(contributionSchema).optional(),
  gates: z.array(gateSchema).optional(),
  taskContentResolver: resolverSchema.optional(),
  reviewer: openObject().optional().describe("gsd-core's reviewer lane: shown at consent, never invoked by the-loop."),
  runtime: openObject().optional().describe("gsd-core's runtime descriptor: the-loop projects nothing onto host runtimes."),
});

/** What gsd-core's validator requires of a manifest with a `role`, by role. */
const REQUIRED_BY_ROLE: Readonly<Record<(typeof ROLES)[number], readonly string[]>> = {
  feature: ["title", "tier", "requires", "runtimeCompat", "skills", "agents", "config", "steps", "contributions", "gates"],
  runtime: ["title", "tier", "requires", "runtime"],
  reviewer: ["title", "tier", "requires", "reviewer"],
};
const FEATURE_ONLY = ["skills", "agents", "steps", "contributions", "gates", "hooks", "activationKey", "taskContentResolver"] as const;

function roleRules(manifest: z.output<typeof manifestObject>, context: z.RefinementCtx): void {
  const role = manifest.role;
  const issue = (path: PropertyKey[], message: string): void => context.addIssue({ code: "custom", path, message });
  if (role !== undefined) {
    for (const key of REQUIRED_BY_ROLE[role]) {
      if ((manifest as Record<string, unknown>)[key] === undefined) issue([key], `required by gsd-core's manifest for role "${role}"`);
    }
    if (role === "feature" && manifest.reviewer !== undefined)
      issue(["reviewer"], 'a "feature" capability has no reviewer body (gsd-core admits it on role runtime or reviewer only)');
    if (role !== "feature") {
      for (const key of FEATURE_ONLY) if (manifest[key] !== undefined) issue([key], `a "${role}" capability may not have ${key}: it is a feature-only field`);
    }
    if (role === "reviewer" && manifest.runtime !== undefined) issue(["runtime"], 'a "reviewer" capability has no runtime body (it is not an install target)');
    for (const [key, value] of Object.entries(manifest.config ?? {})) {
      if (typeof value !== "object")
        issue(
          ["config", key],
          `a config entry is {type, default, description} in gsd-core's format (a manifest with a role); write {"type": "${typeof value}", "default": ${JSON.stringify(value)}, "description": "…"}`,
        );
    }
    manifest.steps?.forEach((step, index) => {
      if (step.produces === undefined) issue(["steps", index, "produces"], "required by gsd-core's manifest (use [] when it produces none)");
      if (step.consumes === undefined) issue(["steps", index, "consumes"], "required by gsd-core's manifest (use [] when it consumes none)");
      if (step.onError === undefined) issue(["steps", index, "onError"], 'required by gsd-core\'s manifest: "skip" or "halt"');
    });
    manifest.contributions?.forEach((contribution, index) => {
      if (contribution.produces === undefined) issue(["contributions", index, "produces"], "required by gsd-core's manifest (use [] when it produces none)");
      if (contribution.consumes === undefined) issue(["contributions", index, "consumes"], "required by gsd-core's manifest (use [] when it consumes none)");
      const roles = rolesAt(contribution.point);
      if (!roles.includes(contribution.into))
        issue(["contributions", index, "into"], `"${contribution.into}" is not an agent role of ${contribution.point}; it publishes ${roles.join(", ")}`);
    });
  }
  const declared = new Set(Object.keys(manifest.config ?? {}));
  if (manifest.activationKey !== undefined && !declared.has(manifest.activationKey)) {
    issue(["activationKey"], `"${manifest.activationKey}" is not a key of this capability's config; declare it there with its default`);
  }
  const skills = manifest.skills === undefined ? undefined : new Set(manifest.skills);
  const agents = manifest.agents === undefined ? undefined : new Set(manifest.agents);
  manifest.steps?.forEach((step, index) => {
    if (step.ref.skill !== undefined && skills !== undefined && !skills.has(step.ref.skill)) {
      issue(["steps", index, "ref", "skill"], `"${step.ref.skill}" is not declared in this capability's skills [${[...skills].join(", ")}]`);
    }
    if (step.ref.agent !== undefined && agents !== undefined && !agents.has(step.ref.agent)) {
      issue(["steps", index, "ref", "agent"], `"${step.ref.agent}" is not declared in this capability's agents [${[...agents].join(", ")}]`);
    }
  });
  for (const [list, entries] of [
    ["steps", manifest.steps ?? []],
    ["contributions", manifest.contributions ?? []],
    ["gates", manifest.gates ?? []],
  ] as const) {
    entries.forEach((entry, index) => {
      if (entry.when !== undefined && !declared.has(entry.when))
        issue([list, index, "when"], `"${entry.when}" is not a key of this capability's config; declare it there with its default`);
    });
  }
  const names = new Map<string, number>();
  (manifest.commands ?? []).forEach((command, index) => {
    if (!("name" in command)) return;
    const earlier = names.get(command.name);
    if (earlier !== undefined) issue(["commands", index, "name"], `commands[${earlier}] is already named "${command.name}"`);
    names.set(command.name, index);
  });
}

function normalize(manifest: z.output<typeof manifestObject>) {
  const config: Record<string, ConfigEntry> = {};
  for (const [key, entry] of Object.entries(manifest.config ?? {})) {
    config[key] = typeof entry === "object" ? entry : { type: typeof entry as "boolean" | "string" | "number", default: entry };
  }
  const commands = manifest.commands ?? [];
  return {
    ...manifest,
    /** gsd-core's format (a manifest with a role) or the-loop's earlier one. */
    format: manifest.role !== undefined ? ("gsd-core" as const) : ("the-loop" as const),
    role: manifest.role ?? ("feature" as const),
    requires: manifest.requires ?? [],
    hooks: manifest.hooks ?? [],
    config,
    commands: commands.filter((command): command is z.output<typeof loopCommandSchema> => "name" in command),
    commandModules: commands.filter((command): command is z.output<typeof commandModuleSchema> => "family" in command),
    steps: (manifest.steps ?? []).map((step) => ({
      ...step,
      produces: step.produces ?? [],
      consumes: step.consumes ?? [],
      onError: step.onError ?? ("skip" as const),
    })),
    contributions: (manifest.contributions ?? []).map((contribution) => ({
      ...contribution,
      produces: contribution.produces ?? [],
      consumes: contribution.consumes ?? [],
    })),
    gates: manifest.gates ?? [],
  };
}

export const manifestSchema = manifestObject.superRefine(roleRules).transform(normalize).meta({
  title: "the-loop capability manifest",
  description: "A capability bundle's capability.yaml or capability.json: gsd-core's format, or the-loop's earlier one (docs/capabilities.md).",
});

export type CapabilityManifest = z.output<typeof manifestSchema>;
export type CapabilityStep = CapabilityManifest["steps"][number];
export type CapabilityContribution = CapabilityManifest["contributions"][number];
export type CapabilityGate = CapabilityManifest["gates"][number];
export type CapabilityCommand = CapabilityManifest["commands"][number];
export type CapabilityCommandModule = CapabilityManifest["commandModules"][number];
export type GatePredicate = z.output<typeof predicateSchema>;
export type TaskContentResolver = NonNullable<CapabilityManifest["taskContentResolver"]>;
export type HookFragment = NonNullable<CapabilityStep["fragment"]>;

/** A field path as a reader writes it: `steps[0].ref.command`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((text, key) => (typeof key === "number" ? `${text}[${key}]` : text ? `${text}.${String(key)}` : String(key)), "");
}

/** The manifest in `raw`, or every problem, each naming the field (`steps[0].ref.command: …`). */
export function parseManifest(raw: unknown): { manifest?: CapabilityManifest; problems: string[] } {
  const parsed = manifestSchema.safeParse(raw);
  if (parsed.success) return { manifest: parsed.data, problems: [] };
  return { problems: parsed.error.issues.map((issue) => `${fieldPath(issue.path) || "(manifest)"}: ${issue.message}`) };
}

/**
 * Whether a `when` (or an `activationKey`) naming `key` holds: the value is truthy, as gsd-core's
 * `Boolean()` reads it. A value is the slice's own key only, and its type is the one the slice
 * declares (load.ts refuses an operator's value of another type), so a boolean key's `"false"`
 * never reaches this.
 */
export function whenHolds(key: string | undefined, values: Readonly<Record<string, unknown>>): boolean {
  if (key === undefined) return true;
  return Object.hasOwn(values, key) && Boolean(values[key]);
}

/** Every command word sequence the manifest's hooks name, with the field naming it and the point. */
export function commandReferences(manifest: CapabilityManifest): { field: string; command: string; point: LoopPoint; kind: "step" | "gate"; index: number }[] {
  return [
    ...manifest.steps.flatMap((step, index) =>
      step.ref.command !== undefined
        ? [{ field: `steps[${index}].ref.command`, command: step.ref.command, point: step.point, kind: "step" as const, index }]
        : [],
    ),
    ...manifest.gates.flatMap((gate, index) =>
      gate.check.query !== undefined
        ? [{ field: `gates[${index}].check.query`, command: gate.check.query, point: gate.point, kind: "gate" as const, index }]
        : [],
    ),
  ];
}

/** A comparator's version as three numbers (missing parts are 0); undefined when it is not one. */
function versionParts(text: string): [number, number, number] | undefined {
  const match = /^v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?(?:[-+].*)?$/.exec(text.trim());
  if (!match) return undefined;
  const part = (value: string | undefined): number => (value === undefined || /[xX*]/.test(value) ? 0 : Number(value));
  return [part(match[1]), part(match[2]), part(match[3])];
}
const compare = (a: readonly number[], b: readonly number[]): number => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;

/** Whether `version` satisfies one comparator (`>=1.6.0`, `^1.2`, `~1.2.3`, `1.x`, `*`). */
function satisfiesComparator(version: readonly number[], comparator: string): boolean {
  if (comparator === "" || comparator === "*" || /^[xX]$/.test(comparator)) return true;
  const match = /^(<=|>=|<|>|=|\^|~)?\s*(.+)$/.exec(comparator);
  const operator = match?.[1] ?? "";
  const bound = versionParts(match?.[2] ?? "");
  if (bound === undefined) return false;
  const order = compare(version, bound);
  const wild = (match?.[2] ?? "").split(".").length;
  switch (operator) {
    case ">=":
      return order >= 0;
    case ">":
      return order > 0;
    case "<=":
      return order <= 0;
    case "<":
      return order < 0;
    case "^": {
      const upper: [number, number, number] = bound[0] > 0 ? [bound[0] + 1, 0, 0] : bound[1] > 0 ? [0, bound[1] + 1, 0] : [0, 0, bound[2] + 1];
      return order >= 0 && compare(version, upper) < 0;
    }
    case "~":
      return order >= 0 && compare(version, wild === 1 ? [bound[0] + 1, 0, 0] : [bound[0], bound[1] + 1, 0]) < 0;
    default: {
      // A bare version: exact, or a partial one (`1`, `1.6`, `1.x`) covering what it leaves open.
      const given = (match?.[2] ?? "").split(".").filter((part) => !/^[xX*]$/.test(part)).length;
      return given >= 3 ? order === 0 : version.slice(0, given).every((value, index) => value === bound[index]);
    }
  }
}

/** Whether the gsd-core version the-loop implements satisfies `range` (npm's range grammar: `||`, spaces, `a - b`). */
export function gsdVersionSatisfies(range: string, version: string = GSD_VERSION): boolean {
  const parts = versionParts(version);
  if (parts === undefined) return false;
  return range.split("||").some((alternative) => {
    const hyphen = /^\s*(\S+)\s+-\s+(\S+)\s*$/.exec(alternative);
    const comparators = hyphen
      ? [`>=${hyphen[1]}`, `<=${hyphen[2]}`]
      : alternative
          .trim()
          .replace(/(<=|>=|<|>|=|\^|~)\s+/g, "$1")
          .split(/\s+/);
    return comparators.every((comparator) => satisfiesComparator(parts, comparator));
  });
}

/** The text of the checked-in JSON Schema of manifests (editors check a manifest against it). */
export function capabilityJsonSchemaText(): string {
  const schema = z.toJSONSchema(manifestSchema, { target: "draft-2020-12", io: "input" });
  return `${JSON.stringify(schema, null, 2)}\n`;
}
