import { z } from "zod";
import { budgetSchema } from "./budget-schema.js";
import { feedbackSchema } from "./feedback-schema.js";
import { supervisionSchema } from "./supervision-schema.js";
import { capabilitiesSchema } from "./capability-schema.js";
import { checkGraphChoices, graphFilesSchema, graphSettingsSchema } from "./graph-schema.js";
import { commandKeywordSchema } from "./keyword-schema.js";
import { stateSchema } from "./state-schema.js";

export { STATE_STORES, stateSchema } from "./state-schema.js";
export type { StateStore } from "./state-schema.js";
import { notifySchema } from "./notify-schema.js";
import { limitsSchema } from "./limits-schema.js";
import { GITHUB_REPOSITORY_PATTERN, LOCAL_PROJECT_PATTERN } from "./name-patterns.js";
import { checkDashboardOperator, dashboardSchema } from "./dashboard-schema.js";

/**
 * The one source of truth for the CLI config: the TypeScript types (`CliConfig`), validation,
 * the published `.the-loop/cli-config.schema.json` and the reference table in `docs/config.md`
 * all come from here. Every object is strict, so a misspelt key is an error, not a silent no-op.
 *
 * Annotations beyond JSON Schema's own: `x-derivedDefault` documents a default computed from
 * another key (a path under `state.root`); `x-secret` marks a value `config show` must redact.
 */

const pathSetting = (description: string, derivedDefault: string) => z.string().min(1).optional().meta({ description, "x-derivedDefault": derivedDefault });

export { GITHUB_REPOSITORY_PATTERN, LOCAL_PROJECT_PATTERN } from "./name-patterns.js";

export const BUILTIN_HARNESSES = ["claude", "cursor", "gemini", "codex"] as const;
export const SPAWN_POLICIES = ["never", "always", "labeled"] as const;
export type SpawnPolicy = (typeof SPAWN_POLICIES)[number];
export const DEFAULT_AUTO_EXECUTE_LABEL = "the-loop: auto-execute";

const argvSchema = z.array(z.string().min(1)).min(1);

export const harnessSchema = z
  .strictObject({
    command: argvSchema
      .optional()
      .describe(
        "The program and its arguments, as an argv list (never a shell string). For the built-in `claude`, `cursor`, `gemini` and `codex` it replaces the binary; any other harness name is a command harness and needs it: `{prompt}`, `{session_id}` and `{work_item}` in an element are replaced at launch.",
      ),
    resumeCommand: argvSchema
      .optional()
      .describe(
        "Command harnesses only: the argv that resumes a conversation after a dead pane (same placeholders). Without it a respawn starts afresh with the new event as its prompt.",
      ),
    args: z
      .array(z.string())
      .default([])
      .describe(
        'Extra arguments for a built-in harness, inserted before the prompt (for `claude` and `codex` the prompt follows a `--`, so a variadic option such as `--allowedTools` cannot take it). `gemini` runs with `--approval-mode=yolo` unless these name an approval option (`--approval-mode=…`, `--yolo`); `codex` runs with approvals off and its own sandbox off (`-c approval_policy="never" -c sandbox_mode="danger-full-access"`), which `-a …` / `-s …` here override; otherwise the-loop adds no permissions of its own.',
      ),
    readyPattern: z
      .string()
      .min(1)
      .max(500)
      .refine(isCompilableRegex, "not a valid regular expression")
      .optional()
      .describe(
        "A regular expression that matches the harness's screen once it takes input (its prompt line or footer). Input waits for it, up to `tmux.readyTimeoutSeconds`. Built in for `claude`, `gemini` and `codex`; without one, input waits `tmux.startupGraceSeconds` after a start.",
      ),
  })
  .describe("One agent harness.");

function isCompilableRegex(source: string): boolean {
  try {
    new RegExp(source);
    return true;
  } catch {
    return false;
  }
}

export const tmuxSchema = z
  .strictObject({
    socketName: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/, "letters, digits, '.', '_' and '-'")
      .optional()
      .describe("Run sessions on a separate tmux server (`tmux -L <name>`); the default server when unset."),
    passEnv: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*\*?$/, "a variable name, or a prefix of one ending in *"))
      .default([])
      .describe(
        "Variables of the daemon's environment every session gets besides the built-in list (docs/sessions.md, \"A session's environment\"): names, or prefixes ending in `*` such as `AWS_*`. The webhook secret is never passed.",
      ),
    remainOnExit: z.boolean().default(true).describe("Keep a pane readable after its harness exits."),
    resumeOnRespawn: z.boolean().default(true).describe("When a session's pane has died, resume the same conversation where the harness supports it."),
    startupGraceSeconds: z
      .number()
      .min(0)
      .max(120)
      .default(3)
      .describe(
        "Seconds a newly started harness is given to come up before the first event is pasted into it (a paste that arrives before it reads input can be split into lines or lost).",
      ),
    readyTimeoutSeconds: z
      .number()
      .min(1)
      .max(600)
      .default(60)
      .describe(
        "Longest an input waits for a harness with a ready pattern to show it (a dialog or a slow start); past it the input is not pasted, `session.not_ready` is recorded, and the event is tried again later.",
      ),
    keepSessionOnClose: z.boolean().default(true).describe("Keep the tmux session when its work item closes, so the transcript stays readable."),
    killHarnessOnClose: z.boolean().default(true).describe("Terminate the harness (SIGTERM, then SIGKILL after the grace period) when its work item closes."),
    harnessKillGraceSeconds: z.number().min(0).max(300).default(5).describe("Seconds between SIGTERM and SIGKILL when terminating a harness."),
  })
  .describe("The tmux runner that hosts every session.");

export const HARNESS_TRUST_SCOPES = ["directory", "workspace-root"] as const;
export type HarnessTrustScope = (typeof HARNESS_TRUST_SCOPES)[number];

export const harnessTrustSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(true)
      .describe(
        'Before each start of a `claude` or `gemini` session, mark its folder trusted in the harness\'s own config (Claude Code: trusted and onboarded; Gemini CLI: trusted, and its sign-in choice and nudges settled), so the session does not stop on a "Do you trust this folder?" dialog.',
      ),
    scope: z
      .enum(HARNESS_TRUST_SCOPES)
      .default("directory")
      .describe(
        "`directory`: trust exactly the session's folder. `workspace-root`: also trust `workspace.root`, which covers every checkout beneath it (never `/` or the home folder).",
      ),
  })
  .describe("What the-loop pre-accepts in a harness's own config for an unattended start (see docs/agents.md).");

export const SANDBOX_MODES = ["auto", "bubblewrap", "none"] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

const sandboxBindSchema = z.union([
  z.string().min(1).describe("A path bound read-only at the same place."),
  z.strictObject({
    source: z.string().min(1).describe("The path outside: absolute, `~/…` (the home) or relative to the project directory."),
    target: z.string().min(1).optional().describe("Where it appears inside (absolute); the same path when left out."),
    mode: z.enum(["ro", "rw"]).default("ro").describe("`ro`: read-only (the default). `rw`: the session may write there."),
  }),
]);

export const sandboxSchema = z
  .strictObject({
    mode: z
      .enum(SANDBOX_MODES)
      .default("auto")
      .describe(
        "`auto`: each session runs in a bubblewrap sandbox where bwrap works here, unsandboxed (a `status` problem) where it does not. `bubblewrap`: a session never starts without one. `none`: no sandbox (a `status` problem): the agent reaches everything its OS user can.",
      ),
    bind: z
      .array(sandboxBindSchema)
      .default([])
      .describe(
        "Paths bound into every session's sandbox besides its own folder (a credential for `git push`, a cache, a tool's install). Never the state root or the home itself.",
      ),
  })
  .describe(
    "The sandbox each session's agent runs in (docs/security.md): its folder, its agent's config and its own socket to the-loop, nothing else of this machine's.",
  );

export const WORKSPACE_STRATEGIES = ["worktree", "clone"] as const;
export type WorkspaceStrategy = (typeof WORKSPACE_STRATEGIES)[number];

export const workspaceSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(true)
      .describe(
        "Give each GitHub work item's session its own checkout of the repository. Off: sessions start in `spawnWorkdir`. Local work items never get one.",
      ),
    root: pathSetting("Folder of the shared clones and per-item checkouts. Used verbatim when set.", "<state.root>/workspaces"),
    strategy: z
      .enum(WORKSPACE_STRATEGIES)
      .default("worktree")
      .describe("`worktree`: one shared clone per repository and a git worktree per work item (cheap). `clone`: a full clone per work item."),
    keepCheckoutOnClose: z.boolean().default(false).describe("Keep a work item's checkout when its session closes (the shared clone is always kept)."),
    gitTimeoutSeconds: z
      .number()
      .min(1)
      .max(7_200)
      .default(600)
      .describe("Longest any one git command (clone, fetch, worktree) may run before it is stopped and the spawn fails."),
  })
  .describe("Checkouts the sessions of GitHub work items run in.");

export const REACTION_CONTENTS = ["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"] as const;
export type ReactionContent = (typeof REACTION_CONTENTS)[number];

const reactionSetting = (fallback: ReactionContent, when: string) =>
  z
    .enum([...REACTION_CONTENTS, ""])
    .default(fallback)
    .describe(`Reaction added ${when}; "" adds none.`);

export const reactionsSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(true)
      .describe("React on GitHub to the comment (or the item) an event came from, so its author sees it was picked up. Best-effort."),
    started: reactionSetting("eyes", "when the-loop takes the event"),
    completed: reactionSetting("hooray", "when the event reached the session"),
    failed: reactionSetting("confused", "when carrying the event out failed"),
  })
  .describe("Reactions on the GitHub comments that reach a session.");

export const CONTROL_COMMANDS = ["start", "stop", "pause", "resume"] as const;

/** The spec's default keywords: namespaced, so ordinary prose never reads as a command. */
export const DEFAULT_CONTROL_KEYWORDS = {
  start: "the-loop:start-execution",
  stop: "the-loop:stop-execution",
  pause: "the-loop:pause-execution",
  resume: "the-loop:resume-execution",
} as const;

const controlKeyword = (command: (typeof CONTROL_COMMANDS)[number], meaning: string) => commandKeywordSchema(DEFAULT_CONTROL_KEYWORDS[command], meaning);

export const controlSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(true)
      .describe("Read control keywords in comments by authorized people. Off: no comment is a command and comments reach the session as they are."),
    requireStartCommand: z
      .boolean()
      .default(true)
      .describe(
        "The label (or `spawnOnUnmatched: always`) only arms a work item; a session starts when an authorized person issues the start keyword or runs `the-loop sessions start`. Off: the label alone starts a session.",
      ),
    keywords: z
      .strictObject({
        start: controlKeyword("start", "starts execution on an armed work item (or resumes a paused session)"),
        stop: controlKeyword("stop", "closes the session and keeps the item from starting again until the next start"),
        pause: controlKeyword("pause", "pauses the session: events are recorded and dropped until resume"),
        resume: controlKeyword("resume", "resumes a paused session, which is told to re-read the thread"),
      })
      .prefault({})
      .superRefine((keywords, context) => {
        const seen = new Map<string, string>();
        for (const command of CONTROL_COMMANDS) {
          const folded = keywords[command].toLowerCase();
          const earlier = seen.get(folded);
          if (earlier !== undefined) {
            context.addIssue({
              code: "custom",
              path: [command],
              message: `the ${command} keyword is the same as the ${earlier} keyword; each command needs its own`,
            });
          }
          seen.set(folded, command);
        }
      })
      .describe("The words that are commands, one per command."),
  })
  .describe("Execution control: authorized people start, stop, pause and resume sessions by comment or from the CLI.");

export const routingSchema = z
  .strictObject({
    registryDir: pathSetting("Folder of session records, one JSON file per work item. Used verbatim when set.", "<state.root>/sessions"),
    authorizedUsers: z
      .array(z.string().min(1))
      .default([])
      .describe("Logins whose comments and actions the-loop acts on (exact match). Empty means nothing a person does is acted on (fail closed)."),
    spawnOnUnmatched: z
      .enum(SPAWN_POLICIES)
      .default("labeled")
      .describe(
        "Which work items without a live session are armed for one: never, always, or those carrying `autoExecuteLabel`. An armed item starts on an authorized start command (`routing.control.requireStartCommand`), or on its next event when that is off.",
      ),
    autoExecuteLabel: z
      .string()
      .min(1)
      .default(DEFAULT_AUTO_EXECUTE_LABEL)
      .describe("The label that arms a work item for a session (compared case-insensitively)."),
    defaultHarness: z.string().min(1).default("claude").describe("The harness new sessions run: `claude`, `cursor`, or a name under `harnesses`."),
    harnesses: z
      .record(z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/), harnessSchema)
      .default({})
      .describe("Harness settings by name. `claude` and `cursor` are built in; any other name is a command harness."),
    harnessByLabel: z
      .record(z.string().min(1), z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/))
      .default({})
      .describe(
        "A label → the harness a work item carrying it runs (e.g. `agent:codex: codex`), the first mapped label in this order winning; `sessions start --agent` comes first, `defaultHarness` last. Only names this config allows: a built-in or one under `harnesses`.",
      ),
    spawnWorkdir: z.string().min(1).default(".").describe("Working directory of a new session. Relative to the project directory."),
    spawnPromptTemplate: z.string().min(1).optional().describe("File whose text replaces the built-in boot prompt ({{placeholders}}: see docs/prompts.md)."),
    promptTemplate: z.string().min(1).optional().describe("File whose text replaces the built-in prompt for events delivered into a live session."),
    maxConcurrentDispatches: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(4)
      .describe("Heavy work (spawns, closes) that may run at once; deliveries to live sessions never wait for it."),
    dedupCacheSize: z.number().int().min(16).max(1_000_000).default(1024).describe("Delivery ids remembered in memory to drop a duplicate delivery."),
    tmux: tmuxSchema.prefault({}),
    harnessTrust: harnessTrustSchema.prefault({}),
    sandbox: sandboxSchema.prefault({}),
    announce: z
      .strictObject({
        enabled: z.boolean().default(true).describe("Post a (marked) comment on the work item when its session starts."),
      })
      .prefault({})
      .describe("The session announcement."),
    workspace: workspaceSchema.prefault({}),
    reactions: reactionsSchema.prefault({}),
    feedback: feedbackSchema.prefault({}),
    control: controlSchema.prefault({}),
    limits: limitsSchema,
    budget: budgetSchema.prefault({}),
    supervision: supervisionSchema.prefault({}),
    mcp: z
      .strictObject({
        enabled: z
          .boolean()
          .default(true)
          .describe(
            "Register the-loop's MCP server (`the-loop mcp`: ask, graph_complete, graph_status, why) with each built-in harness at spawn, its tools pre-approved and no other. Off: the agent reaches the-loop through its shell only.",
          ),
      })
      .prefault({})
      .describe("the-loop as an MCP server for its agents (docs/agents.md)."),
  })
  .superRefine((routing, context) => {
    const builtin = (name: string): boolean => (BUILTIN_HARNESSES as readonly string[]).includes(name);
    for (const [name, harness] of Object.entries(routing.harnesses)) {
      if (!builtin(name) && !harness.command) {
        context.addIssue({
          code: "custom",
          path: ["harnesses", name, "command"],
          message: `"${name}" is not a built-in harness (${BUILTIN_HARNESSES.join(", ")}), so it needs a command: an argv list such as ["my-agent", "{prompt}"]`,
        });
      }
      if (builtin(name) && harness.resumeCommand) {
        context.addIssue({
          code: "custom",
          path: ["harnesses", name, "resumeCommand"],
          message: `"${name}" resumes by itself; resumeCommand is for command harnesses only`,
        });
      }
    }
    for (const [label, harness] of Object.entries(routing.harnessByLabel)) {
      if (!builtin(harness) && !Object.hasOwn(routing.harnesses, harness)) {
        context.addIssue({
          code: "custom",
          path: ["harnessByLabel", label],
          message: `unknown harness "${harness}"; known: ${[...BUILTIN_HARNESSES, ...Object.keys(routing.harnesses)].join(", ")} (declare it under routing.harnesses)`,
        });
      }
    }
    for (const harness of Object.keys(routing.limits.perHarness)) {
      if (!builtin(harness) && !Object.hasOwn(routing.harnesses, harness)) {
        context.addIssue({
          code: "custom",
          path: ["limits", "perHarness", harness],
          message: `unknown harness "${harness}"; known: ${[...BUILTIN_HARNESSES, ...Object.keys(routing.harnesses)].join(", ")} (declare it under routing.harnesses)`,
        });
      }
    }
    if (!builtin(routing.defaultHarness) && !Object.hasOwn(routing.harnesses, routing.defaultHarness)) {
      const known = [...BUILTIN_HARNESSES, ...Object.keys(routing.harnesses)].join(", ");
      context.addIssue({
        code: "custom",
        path: ["defaultHarness"],
        message: `unknown harness "${routing.defaultHarness}"; known: ${known} (declare it under routing.harnesses)`,
      });
    }
  })
  .describe("Policy shared by every ingress (webhook, poller, CLI): which events reach which session.");

export const localPollSourceSchema = z
  .strictObject({
    provider: z.literal("local").describe("The embedded local tracker."),
    projects: z
      .array(z.string().regex(new RegExp(LOCAL_PROJECT_PATTERN)))
      .optional()
      .describe("Local projects to watch; every project when omitted."),
  })
  .describe("A local tracker source.");

export const githubPollSourceSchema = z
  .strictObject({
    provider: z.literal("github").describe("GitHub (or GitHub Enterprise, through integrations.github.apiUrl)."),
    repos: z
      .array(z.string().regex(new RegExp(GITHUB_REPOSITORY_PATTERN), "owner/repo, or host/owner/repo for GitHub Enterprise"))
      .min(1)
      .describe("Repositories to watch, as `owner/repo`."),
    label: z
      .string()
      .min(1)
      .optional()
      .describe("Only items carrying this label (or with a live session) are watched; `routing.autoExecuteLabel` when omitted."),
  })
  .describe("A GitHub source: every repository is read with a few conditional, `since`-bounded listings per cycle.");

export const pollSourceSchema = z.discriminatedUnion("provider", [localPollSourceSchema, githubPollSourceSchema]);

export const pollingSchema = z
  .strictObject({
    enabled: z.boolean().default(false).describe("Run the poller in the daemon (`the-loop start`)."),
    intervalSeconds: z.number().min(0.1).max(86_400).default(60).describe("Pause between the end of one poll cycle and the start of the next."),
    sources: z.array(pollSourceSchema).default([]).describe("What to poll. Empty with `enabled: true` is a config error."),
    stateFile: pathSetting("File holding the poller's cursors, ETags and seen ids. Used verbatim when set.", "<state.root>/sessions/poll-state.json"),
  })
  .superRefine((polling, context) => {
    if (polling.enabled && polling.sources.length === 0) {
      context.addIssue({
        code: "custom",
        path: ["sources"],
        message: "polling is enabled but has no sources; add one, e.g. sources: [{provider: local}]",
      });
    }
  })
  .describe("The poller: pull ingress from the trackers.");

export const eventLogSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe("Record every observable step as a JSON line."),
    path: pathSetting("The event log file (JSON lines). Used verbatim when set.", "<state.root>/logs/events.jsonl"),
  })
  .describe("The event log read by `the-loop events`.");

/** The events a receiver acts on for CI feedback: an older config's own `events` list may lack them (upgrade-config says so). */
export const CI_WEBHOOK_EVENTS = ["check_run", "check_suite", "status"] as const;
const ITEM_WEBHOOK_EVENTS = ["issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment"] as const;
export const GITHUB_WEBHOOK_EVENTS = [...ITEM_WEBHOOK_EVENTS, ...CI_WEBHOOK_EVENTS] as const;
export type GitHubWebhookEvent = (typeof GITHUB_WEBHOOK_EVENTS)[number];

export const ghWebhookSchema = z
  .strictObject({
    enabled: z.boolean().default(false).describe("Run the webhook receiver in the daemon (`the-loop start`)."),
    host: z
      .string()
      .min(1)
      .default("127.0.0.1")
      .describe("Address the receiver listens on. Expose it through a tunnel or a reverse proxy rather than on 0.0.0.0."),
    port: z.number().int().min(0).max(65_535).default(8787).describe("Port the receiver listens on (0: any free port)."),
    path: z
      .string()
      .regex(/^\/[A-Za-z0-9._~/-]*$/, "an absolute URL path such as /gh-webhook")
      .default("/gh-webhook")
      .describe("URL path GitHub posts deliveries to; `GET /healthz` answers on the same port."),
    secretEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name")
      .default("THE_LOOP_GH_WEBHOOK_SECRET")
      .describe("Environment variable holding the webhook secret (never the secret itself). The receiver refuses to start when it is unset."),
    insecureAllowUnsigned: z
      .boolean()
      .default(false)
      .describe(
        "Accept deliveries without a signature when the secret variable is unset. Anyone who can reach the port can then drive sessions; the daemon warns at every start.",
      ),
    events: z
      .array(z.enum(GITHUB_WEBHOOK_EVENTS))
      .min(1)
      .default([...GITHUB_WEBHOOK_EVENTS])
      .describe("GitHub events acted on; other events are acknowledged and ignored."),
    maxBodyBytes: z
      .number()
      .int()
      .min(1_024)
      .max(100 * 1024 * 1024)
      .default(25 * 1024 * 1024)
      .describe("Largest delivery body accepted; a larger one is refused with 413 (GitHub caps payloads at 25 MB)."),
    pidfile: pathSetting(
      "Pidfile of the webhook receiver; holding its lock is what makes the receiver the single instance. Used verbatim when set.",
      "<state.root>/gh-webhook.pid",
    ),
    routing: routingSchema.optional().meta({
      deprecated: true,
      description: "Older spelling of the top-level `routing` block. Still read (with a warning) as if it were written at the top level; move it there.",
    }),
  })
  .describe("The GitHub webhook receiver.");

export const webhooksSchema = z
  .strictObject({
    ghWebhook: ghWebhookSchema.prefault({}),
  })
  .describe("Push ingress.");

export const localTrackerSchema = z
  .strictObject({
    project: z
      .string()
      .regex(new RegExp(LOCAL_PROJECT_PATTERN), "a project name is letters, digits, '.', '_' and '-' (at most 63)")
      .default("default")
      .describe("Project that `the-loop item` commands use when a ref gives none (`#7` means `local:<project>#7`). Stored in lower case."),
  })
  .describe("The embedded local tracker: work items kept under `<state.root>/tracker/`, no network, no credentials.");

export const DEFAULT_GITHUB_API_URL = "https://api.github.com";

export const githubIntegrationSchema = z
  .strictObject({
    tokenEnv: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name"))
      .min(1)
      .default(["GH_TOKEN", "GITHUB_TOKEN"])
      .describe(
        "Environment variables tried in order for the GitHub token (never the token itself); when none is set, `gh auth token` is asked if `gh` is installed.",
      ),
    apiUrl: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe("REST API base: `https://HOST/api/v3` for GitHub Enterprise. Default: $GITHUB_API_URL, else https://api.github.com."),
    ghBinary: z.string().min(1).default("gh").describe("The `gh` program asked for a token when no token variable is set."),
    selfLogin: z
      .string()
      .regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$/, "a GitHub login, or a GitHub App's `<slug>[bot]`")
      .optional()
      .describe(
        "The login the-loop's token posts as: a bot account's login, or a GitHub App's `<slug>[bot]` (an App's installation token cannot read `GET /user`). When set, the-loop never asks GitHub; when unset, it asks `GET /user`, and gate answers wait until it knows (docs/graph.md).",
      ),
  })
  .describe("GitHub: the token and the API the tracker, the poller and the reactions use.");

export const integrationsSchema = z
  .strictObject({
    local: localTrackerSchema.prefault({}),
    github: githubIntegrationSchema.prefault({}),
  })
  .describe("Trackers the-loop talks to.");

export const configSchema = z
  .strictObject({
    version: z.literal(1).optional().describe("Format version of this file. Optional; the-loop writes 1."),
    state: stateSchema.prefault({}),
    routing: routingSchema.prefault({}),
    polling: pollingSchema.prefault({}),
    eventLog: eventLogSchema.prefault({}),
    webhooks: webhooksSchema.prefault({}),
    integrations: integrationsSchema.prefault({}),
    hooks: z
      .array(z.unknown())
      // A bare `hooks:` (every entry commented out) is an empty list: it changes nothing.
      .nullable()
      .optional()
      .describe(
        "Lifecycle hooks: local modules or remote JSON-RPC services run at the points of a work item's delivery, in this order (see docs/hooks.md). Each entry is checked when hooks load, not here, so a one-shot command still runs on a declaration that does not load.",
      ),
    graph: graphSettingsSchema.prefault({}),
    graphs: graphFilesSchema.default([]),
    capabilities: capabilitiesSchema.default([]),
    notify: notifySchema.prefault({}),
    dashboard: dashboardSchema.prefault({}),
  })
  .superRefine(checkGraphChoices)
  .superRefine(checkDashboardOperator)
  .meta({
    title: "the-loop CLI config",
    description: "Configuration of the-loop's daemon and CLI (.the-loop/cli-config.yaml).",
  });

/** The config after defaults: what the rest of the code reads. */
export type CliConfig = z.output<typeof configSchema>;
/** The config as a person writes it: every key optional. */
export type CliConfigInput = z.input<typeof configSchema>;

export type RoutingConfig = CliConfig["routing"];
export type HarnessConfig = z.output<typeof harnessSchema>;
export type PollSource = z.output<typeof pollSourceSchema>;
export type GitHubPollSource = z.output<typeof githubPollSourceSchema>;
export type GhWebhookConfig = CliConfig["webhooks"]["ghWebhook"];
export type GitHubIntegrationConfig = CliConfig["integrations"]["github"];
export type WorkspaceConfig = RoutingConfig["workspace"];
export type ReactionsConfig = RoutingConfig["reactions"];
export type ControlConfig = RoutingConfig["control"];
export type ControlCommand = (typeof CONTROL_COMMANDS)[number];
export { FEEDBACK_REACTIONS, feedbackSchema, repositoryFeedbackSchema } from "./feedback-schema.js";
export type { FeedbackConfig, FeedbackReaction } from "./feedback-schema.js";
export type { GraphConfig, GraphFileConfig } from "./graph-schema.js";
export type { CapabilityEntryConfig } from "./capability-schema.js";
export type { NotifyConfig, NotifyMoment, NotifySinkConfig, NotifySinkKind } from "./notify-schema.js";
export type { DashboardConfig } from "./dashboard-schema.js";
