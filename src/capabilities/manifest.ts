import { z } from "zod";
import { LOOP_POINTS } from "../graph/types.js";

/**
 * A capability's manifest (`capability.yaml` or `capability.json` at the root of its bundle): what
 * it adds at the loop points. This file is the rules one manifest meets on its own; the rules
 * across installed capabilities and the bundle's files are in bundle.ts and load.ts.
 *
 * Everything here comes from a third party, so every string that will reach a process is held
 * to a pattern: a command is lowercase words with single spaces (never a shell string), a
 * predicate is a known kind with its fields, and a resolver's id travels as a whole argv element.
 */

export { LOOP_POINTS } from "../graph/types.js";
export type { LoopPoint } from "../graph/types.js";

/** A command's words: what `ref.command` and `check.query` name and `the-loop <words> …` runs. */
export const COMMAND_PATTERN = "^[a-z][a-z0-9-]*( [a-z][a-z0-9-]*)*$";
const COMMAND_RE = new RegExp(COMMAND_PATTERN);
const COMMAND_HINT = "lowercase words of a-z, 0-9 and '-', one space between words (never a shell string), such as `intel api-surface`";

/** An id, a tracker prefix, a skill, an agent, a role: one kebab word. */
export const KEBAB_PATTERN = "^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$";
const KEBAB_RE = new RegExp(KEBAB_PATTERN);

/** A config key a capability's slice declares: dotted words. */
export const CONFIG_KEY_PATTERN = "^[a-z][a-zA-Z0-9_-]*(\\.[a-z][a-zA-Z0-9_-]*)*$";

/** The exact argv element a resolver's `{{id}}` is: replaced as a whole, never inside a string. */
export const TASK_ID_PLACEHOLDER = "{{id}}";
export const MAX_RESOLVER_TIMEOUT_MS = 120_000;
/** How long `the-loop <words> …` lets a declared command run unless it declares its own `timeoutMs`. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 600_000;
export const MAX_COMMAND_TIMEOUT_MS = 3_600_000;

export const MANIFEST_FILES = ["capability.yaml", "capability.json"] as const;
export const CAPABILITY_SCHEMA_FILE = ".the-loop/capability.schema.json";

export function isCommandWords(value: unknown): value is string {
  return typeof value === "string" && COMMAND_RE.test(value);
}

const kebab = (what: string) => z.string().max(64).regex(KEBAB_RE, `${what} is one kebab word: lowercase letters and digits joined by '-'`);
const commandWords = () => z.string().max(200).regex(COMMAND_RE, `not a command: ${COMMAND_HINT}`);
const point = () => z.enum(LOOP_POINTS).describe("The loop point, one of discuss:pre … ship:post.");
const onError = () => z.enum(["skip", "halt"]);
const when = () =>
  z
    .string()
    .regex(new RegExp(CONFIG_KEY_PATTERN), "a config key is dotted words, such as tdd.enabled")
    .optional()
    .describe("A key of the capability's config: the hook is active only while its value is the boolean true.");
const nonEmpty = (what: string) => z.string().min(1, `${what} is empty`);

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

const commandSchema = z
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
  .describe("A command the capability provides.");

const refSchema = z
  .strictObject({
    skill: kebab("a skill").optional(),
    agent: kebab("an agent").optional(),
    command: commandWords().optional().describe("A command an installed capability declares."),
  })
  .superRefine(exactlyOne(["skill", "agent", "command"], "a ref"))
  .describe("What the step dispatches: exactly one of skill, agent, command.");

const stepSchema = z
  .strictObject({
    point: point(),
    ref: refSchema,
    onError: onError().default("skip").describe("skip: warn and continue; halt: stop the point. A step never blocks by its result."),
    when: when(),
  })
  .describe("An advisory unit of work at a loop point.");

const fragmentSchema = z
  .strictObject({
    inline: nonEmpty("fragment.inline").optional(),
    file: nonEmpty("fragment.file").optional().describe("A file inside the bundle, relative to it."),
  })
  .superRefine(exactlyOne(["inline", "file"], "a fragment"));

const contributionSchema = z
  .strictObject({
    point: point(),
    into: kebab("a role").describe("The role whose assignment the fragment goes into, such as orchestrator or planner."),
    fragment: fragmentSchema,
    when: when(),
  })
  .describe("Text that goes verbatim into a role's assignment at a loop point.");

const artifact = () => nonEmpty("artifact").describe("A file the work item's run produces, relative to its working directory.");
export const predicateSchema = z
  .discriminatedUnion("kind", [
    z.strictObject({ kind: z.literal("artifact-exists"), artifact: artifact() }),
    z.strictObject({ kind: z.literal("checklist-complete"), artifact: artifact() }),
    z.strictObject({ kind: z.literal("artifact-frontmatter-equals"), artifact: artifact(), field: nonEmpty("field"), equals: z.union([z.string(), z.number(), z.boolean()]) }),
    z.strictObject({
      kind: z.literal("command-exit-zero"),
      argv: z.array(nonEmpty("an argv element")).min(1, "argv is empty").describe("Run without a shell; exit 0 passes."),
    }),
  ])
  .describe("A check the-loop's predicate evaluator knows.");

const agentVerdictSchema = z.strictObject({ ref: kebab("an agent"), prompt: nonEmpty("prompt") });

const checkSchema = z
  .strictObject({
    query: commandWords().optional().describe("A command an installed capability declares; it prints {block, message?}."),
    predicate: predicateSchema.optional(),
    agentVerdict: agentVerdictSchema.optional().describe("An agent's judgement: never blocking."),
  })
  .superRefine(exactlyOne(["query", "predicate", "agentVerdict"], "a check"));

const gateSchema = z
  .strictObject({
    point: point(),
    check: checkSchema,
    blocking: z.boolean().describe("true: a block stops the step with the message; false: the message is surfaced and the loop goes on."),
    onError: onError().describe("When the check itself fails: skip continues with a warning, halt stops."),
    message: nonEmpty("message"),
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
    trackerPrefix: kebab("a trackerPrefix").describe("Task ids `<prefix>-<rest>` belong to this resolver; unique across installed capabilities."),
    invoke: z.strictObject({
      binary: nonEmpty("binary").describe("The program: a name on PATH, an absolute path, or a file in the bundle."),
      args: z
        .array(z.string())
        .refine((args) => args.includes(TASK_ID_PLACEHOLDER), `args holds the exact element "${TASK_ID_PLACEHOLDER}", which the task id replaces`),
      timeoutMs: z.number().int().positive().max(MAX_RESOLVER_TIMEOUT_MS, `timeoutMs is at most ${MAX_RESOLVER_TIMEOUT_MS}`),
    }),
  })
  .describe("Resolves a task's content for execute:task: a bounded subprocess whose failure halts the task.");

const configValue = z.union([z.boolean(), z.string(), z.number()]);

export const manifestSchema = z
  .strictObject({
    $schema: z.string().optional(),
    id: kebab("an id").describe("The capability's id."),
    version: z
      .string()
      .regex(/^[0-9]+\.[0-9]+\.[0-9]+(?:[-+][0-9A-Za-z.-]+)?$/, "a version is semver, such as 1.2.0")
      .describe("Semver."),
    description: nonEmpty("description"),
    requires: z.array(kebab("a required capability")).default([]).describe("Ids of capabilities that must be installed too."),
    config: z
      .record(z.string().regex(new RegExp(CONFIG_KEY_PATTERN), "a config key is dotted words, such as tdd.enabled"), configValue)
      .default({})
      .describe("The capability's config slice: each key with its default."),
    commands: z.array(commandSchema).default([]),
    steps: z.array(stepSchema).default([]),
    contributions: z.array(contributionSchema).default([]),
    gates: z.array(gateSchema).default([]),
    taskContentResolver: resolverSchema.optional(),
  })
  .superRefine((manifest, context) => {
    const names = new Map<string, number>();
    manifest.commands.forEach((command, index) => {
      const earlier = names.get(command.name);
      if (earlier !== undefined) context.addIssue({ code: "custom", path: ["commands", index, "name"], message: `commands[${earlier}] is already named "${command.name}"` });
      names.set(command.name, index);
    });
    const hooks = [
      ["steps", manifest.steps],
      ["contributions", manifest.contributions],
      ["gates", manifest.gates],
    ] as const;
    for (const [list, entries] of hooks) {
      entries.forEach((entry, index) => {
        if (entry.when !== undefined && !Object.hasOwn(manifest.config, entry.when)) {
          context.addIssue({ code: "custom", path: [list, index, "when"], message: `"${entry.when}" is not a key of this capability's config; declare it there with its default` });
        }
      });
    }
  })
  .meta({ title: "the-loop capability manifest", description: "A capability bundle's capability.yaml or capability.json (docs/capabilities.md)." });

export type CapabilityManifest = z.output<typeof manifestSchema>;
export type CapabilityStep = CapabilityManifest["steps"][number];
export type CapabilityContribution = CapabilityManifest["contributions"][number];
export type CapabilityGate = CapabilityManifest["gates"][number];
export type CapabilityCommand = CapabilityManifest["commands"][number];
export type GatePredicate = z.output<typeof predicateSchema>;
export type TaskContentResolver = NonNullable<CapabilityManifest["taskContentResolver"]>;

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
 * Whether a hook whose `when` names `key` is active: only for the boolean `true`, so a `"false"`
 * (or any other string) is never truthy. A key only counts as the values' own.
 */
export function whenHolds(key: string | undefined, values: Readonly<Record<string, unknown>>): boolean {
  if (key === undefined) return true;
  return Object.hasOwn(values, key) && values[key] === true;
}

/** Every command word sequence the manifest's hooks name, with the field naming it. */
export function commandReferences(manifest: CapabilityManifest): { field: string; command: string }[] {
  return [
    ...manifest.steps.flatMap((step, index) => (step.ref.command !== undefined ? [{ field: `steps[${index}].ref.command`, command: step.ref.command }] : [])),
    ...manifest.gates.flatMap((gate, index) => (gate.check.query !== undefined ? [{ field: `gates[${index}].check.query`, command: gate.check.query }] : [])),
  ];
}

/** The text of the checked-in JSON Schema of manifests (editors check a manifest against it). */
export function capabilityJsonSchemaText(): string {
  const schema = z.toJSONSchema(manifestSchema, { target: "draft-2020-12", io: "input" });
  return `${JSON.stringify(schema, null, 2)}\n`;
}
