import { z } from "zod";
import { commandKeywordSchema } from "./keyword-schema.js";

/**
 * The config's side of the process graph: whether it runs, which graph a started item runs, the
 * gate keywords, and the operator's graph files. What a graph file holds is the graph's own
 * schema (src/graph/definition.ts); the config only names the files.
 */

/** A graph's name: kebab words, as `graph.default`, `graphs[].name` and a graph file's `name` spell it. */
export const GRAPH_NAME_PATTERN = "^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$";
export const GRAPH_NAME_MAX = 64;

/** The graphs the package ships (`graphs/<name>.yaml`); an operator's graph cannot take their names. */
export const BUILTIN_GRAPH_NAMES = ["work-item", "adhoc"] as const;
export const DEFAULT_GRAPH_NAME = "work-item";

/** The longest stall window: a week. */
export const MAX_STALL_MINUTES = 7 * 24 * 60;

/** How long a session stays after its run ended, by default; and the longest it may be kept open on a delay (a week). */
export const DEFAULT_CLOSE_AFTER_MINUTES = 10;
export const MAX_CLOSE_AFTER_MINUTES = 7 * 24 * 60;
/** `graph.closeAfterMinutes: never`: a session outlives its run until someone closes it. */
export const CLOSE_NEVER = "never";

export const DEFAULT_GATE_KEYWORDS = {
  approve: "the-loop:approve",
  requestChanges: "the-loop:request-changes",
} as const;

const graphName = () =>
  z.string().max(GRAPH_NAME_MAX).regex(new RegExp(GRAPH_NAME_PATTERN), "a graph name is lowercase words joined by '-', such as work-item");

export const graphSettingsSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe(
        "Run every started work item through a process graph: phases, claims checked by the daemon, human approval gates (docs/graph.md). Off: a started item is one session, as without graphs.",
      ),
    default: graphName()
      .default(DEFAULT_GRAPH_NAME)
      .describe(`The graph a started work item runs: a built-in (${BUILTIN_GRAPH_NAMES.join(", ")}) or a name under \`graphs\`.`),
    keywords: z
      .strictObject({
        approve: commandKeywordSchema(DEFAULT_GATE_KEYWORDS.approve, "approves the work waiting at a human gate"),
        requestChanges: commandKeywordSchema(
          DEFAULT_GATE_KEYWORDS.requestChanges,
          "sends the work waiting at a human gate back along its changes-requested edge",
        ),
      })
      .prefault({})
      .superRefine((keywords, context) => {
        if (keywords.approve.toLowerCase() === keywords.requestChanges.toLowerCase()) {
          context.addIssue({
            code: "custom",
            path: ["requestChanges"],
            message: "the requestChanges keyword is the same as the approve keyword; each answer needs its own",
          });
        }
      })
      .describe("The words that answer a human gate, read with the control keywords' parser and quoting rules."),
    allowSelfApproval: z
      .boolean()
      .default(false)
      .describe(
        "Accept gate answers from the login the-loop itself posts as. Off: the agent works with the operator's token, so a comment by that login may be the agent answering its own gate; give the-loop a separate bot identity instead (docs/graph.md).",
      ),
    stallAfterMinutes: z
      .number()
      .positive()
      .max(MAX_STALL_MINUTES)
      .optional()
      .describe(
        "End a run `stalled` when it has made no progress at an agent node for this many minutes (fractions allowed), checked every poll interval. A gate waiting for a person, a blocked run and a paused session never stall. Unset: runs never stall.",
      ),
    closeAfterMinutes: z
      .union([z.number().min(0).max(MAX_CLOSE_AFTER_MINUTES), z.literal(CLOSE_NEVER)])
      .default(DEFAULT_CLOSE_AFTER_MINUTES)
      .describe(
        "When a run ends (done, failed, canceled, stalled, exhausted), its session is told in one message, then closed this many minutes later (fractions allowed; checked every poll interval, at least once a second), its tmux session kept for the transcript as `routing.tmux.keepSessionOnClose` says. 0: at once; `never`: the session stays until someone closes it.",
      ),
  })
  .describe("The process graph a started work item moves through.");

export const graphFileEntrySchema = z
  .strictObject({
    name: graphName().describe("The graph's name, as `graph.default` and `the-loop graph show` name it; the file's own `name` must be the same."),
    path: z.string().min(1).describe("The graph file (YAML, docs/graph.md): absolute, ~-relative, or relative to the config file's folder (never a checkout)."),
  })
  .describe("One operator graph.");

export const graphFilesSchema = z
  .array(graphFileEntrySchema)
  .superRefine((entries, context) => {
    const seen = new Map<string, number>();
    entries.forEach((entry, index) => {
      if ((BUILTIN_GRAPH_NAMES as readonly string[]).includes(entry.name)) {
        context.addIssue({
          code: "custom",
          path: [index, "name"],
          message: `"${entry.name}" is a built-in graph; give yours another name (copy the built-in's file to change it) and set graph.default to it`,
        });
      }
      const earlier = seen.get(entry.name);
      if (earlier !== undefined) {
        context.addIssue({ code: "custom", path: [index, "name"], message: `graphs[${earlier}] already has the name "${entry.name}"` });
      }
      seen.set(entry.name, index);
    });
  })
  .describe(
    "Graphs besides the built-in ones, each a YAML file the operator keeps (docs/graph.md). Nothing in a checkout or a work item can name a graph file.",
  );

type GraphSettings = z.output<typeof graphSettingsSchema>;
type GraphFileEntry = z.output<typeof graphFileEntrySchema>;

/**
 * The rules across keys: `graph.default` names a graph there is, and the gate keywords are not
 * the control keywords (one comment must never be read as both).
 */
export function checkGraphChoices(
  config: {
    readonly graph: GraphSettings;
    readonly graphs: readonly GraphFileEntry[];
    readonly routing: { readonly control: { readonly keywords: Readonly<Record<string, string>> } };
  },
  context: z.RefinementCtx,
): void {
  const names = [...BUILTIN_GRAPH_NAMES, ...config.graphs.map((entry) => entry.name)];
  // A default that is no name at all has been refused by its own check already.
  const isName = new RegExp(GRAPH_NAME_PATTERN).test(config.graph.default);
  if (isName && !names.includes(config.graph.default)) {
    context.addIssue({
      code: "custom",
      path: ["graph", "default"],
      message: `no graph is named "${config.graph.default}"; known: ${names.join(", ")} (declare it under graphs)`,
    });
  }
  const control = new Map(Object.entries(config.routing.control.keywords).map(([command, keyword]) => [keyword.toLowerCase(), command]));
  for (const [answer, keyword] of Object.entries(config.graph.keywords)) {
    const command = control.get(keyword.toLowerCase());
    if (command !== undefined) {
      context.addIssue({
        code: "custom",
        path: ["graph", "keywords", answer],
        message: `the ${answer} keyword is the same as the control ${command} keyword (routing.control.keywords.${command}); each needs its own`,
      });
    }
  }
}

export type GraphConfig = GraphSettings;
export type GraphFileConfig = GraphFileEntry;
