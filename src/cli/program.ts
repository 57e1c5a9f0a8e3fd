import type { Command } from "commander";
import { HELP_WIDTH, commander } from "./commander.js";
import type { GlobalOptions } from "./context.js";
import { REF_HELP, withRefHint } from "./ref-hint.js";
import { packageVersion } from "./version.js";
import { declareStateCommands } from "./program-state.js";
import type { AskOptions } from "./commands/ask.js";
import type { JsonOption, StopOptions } from "./commands/daemon.js";
import type { DemoOptions } from "./commands/demo.js";
import type { SessionsAttachOptions } from "./commands/sessions/attach.js";
import type { SessionsListOptions } from "./commands/sessions/list.js";
import type { SessionsCloseOptions, SessionsControlOptions, SessionsLinkPrOptions } from "./commands/sessions/sessions.js";
import type { ReceiveOptions } from "./commands/receive.js";
import type { UpgradeConfigOptions } from "./commands/config/upgrade.js";
import type { EventsOptions } from "./commands/events.js";
import type { WhyOptions } from "./commands/why.js";
import type { HookPointsOptions, HooksOptions } from "./commands/hooks.js";
import type { HooksInfoOptions, HooksRunsOptions } from "./commands/hooks/runs.js";
import type { HooksTestOptions } from "./commands/hooks/try.js";
import type { CapabilitiesAddOptions, CapabilitiesListOptions, CapabilitiesRemoveOptions } from "./commands/capabilities/capabilities.js";
import type { GraphListOptions, GraphShowOptions } from "./commands/graph/definitions.js";
import type { LoopRenderHooksOptions } from "./commands/loop/render-hooks.js";
import type { LoopPredicateOptions } from "./commands/loop/predicate.js";
import type { TaskResolveContentOptions } from "./commands/task.js";
import type { GraphAnswerOptions, GraphCompleteOptions, GraphForceOptions, GraphStatusOptions } from "./commands/graph/runs.js";
import type {
  ItemActOptions,
  ItemCheckOptions,
  ItemLabelOptions,
  ItemListOptions,
  ItemNewOptions,
  ItemRepairOptions,
  ItemShowOptions,
} from "./commands/item.js";

/**
 * The whole command surface, declared in one place so help is generated from the same
 * declarations the parser uses. Only commander is loaded here: each action imports its command
 * module when it runs, so `--help` and `--version` never pay for config, YAML or the trackers.
 */

const { Command: CommandClass, InvalidArgumentError, Option } = commander;
type Option = InstanceType<typeof Option>;

export function parseCount(value: string): number {
  if (!/^[0-9]+$/.test(value)) throw new InvalidArgumentError("expected a whole number (0 or more)");
  return Number(value);
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function globalsOf(command: Command): GlobalOptions {
  const options = command.optsWithGlobals<{ config?: string }>();
  return { config: options.config };
}

export function buildProgram(): Command {
  const program = new CommandClass("the-loop")
    .description("Turns issue and pull-request activity into AI coding-agent sessions, with an authorized human in control of every run.")
    .version(packageVersion(), "-V, --version", "print the version")
    .option(
      "--config <path>",
      "config file (default: $THE_LOOP_CLI_CONFIG, else the nearest .the-loop/cli-config.yaml from here up, else ~/.the-loop/cli-config.yaml)",
    )
    // A fixed width: help reads the same on every terminal, and the top-level text can be
    // generated ahead of time (help-text.ts) so `the-loop --help` needs no command table.
    .configureHelp({ helpWidth: HELP_WIDTH })
    // Inherited by every command declared below: a missing ref may be an `#1` the shell ate.
    .configureOutput({ outputError: (message, write) => write(withRefHint(message)) })
    .helpOption("-h, --help", "show help")
    .helpCommand("help [command]", "show help for a command")
    .showSuggestionAfterError()
    .exitOverride();

  program
    .command("demo")
    .description("run the local-tracker flow end to end in a temporary state root and narrate it (no credentials needed)")
    .option("--keep", "keep the project, its daemon and its dashboard running afterwards; print the login URL and how to stop them", false)
    .action(async (options: DemoOptions, command: Command) => {
      await (await import("./commands/demo.js")).runDemo(globalsOf(command), options);
    });

  program
    .command("init")
    .description("write a commented starter config (.the-loop/cli-config.yaml, or --config) that uses the local tracker")
    .action(async (_options: unknown, command: Command) => {
      await (await import("./commands/config/config.js")).runInit(globalsOf(command));
    });

  const config = program.command("config").description("check and inspect the configuration");
  config
    .command("validate")
    .description("load the config and report every problem with its key path and line; exit 2 when invalid")
    .option("--json", "print the result as JSON", false)
    .action(async (options: { json: boolean }, command: Command) => {
      await (await import("./commands/config/config.js")).runConfigValidate(globalsOf(command), options);
    });
  config
    .command("show")
    .description("print the effective config with defaults and every derived path (secrets redacted)")
    .option("--json", "print as JSON", false)
    .action(async (options: { json: boolean }, command: Command) => {
      await (await import("./commands/config/config.js")).runConfigShow(globalsOf(command), options);
    });

  program
    .command("upgrade-config")
    .description(
      "add the settings this version introduced (state.root, routing.control, routing.mcp) to the config in use, each with its default, keeping its comments and layout; report what needs your decision",
    )
    .option("--dry-run", "show the lines it would add (and what it would move) without writing anything", false)
    .option("--move-poll-state", "also move a poll-state file from before state.root under <state.root>/sessions/ (stop the daemon first)", false)
    .option("--json", "print the result as JSON", false)
    .action(async (options: UpgradeConfigOptions, command: Command) => {
      await (await import("./commands/config/upgrade.js")).runUpgradeConfig(globalsOf(command), options);
    });

  program
    .command("events")
    .description("read the event log: filter, format, follow")
    .option("--type <glob>", "event type glob, e.g. 'item.*' (repeatable; any may match)", collect, [])
    .option("--work-item <ref>", "only events about this work item (all of them unless --limit is given)")
    .addOption(new Option("--source <source>", "only events written by this part of the-loop"))
    .addOption(
      new Option("--level <level>", "minimum level (default: info in the table, every level with --format json|jsonl)").choices([
        "debug",
        "info",
        "warning",
        "error",
      ]),
    )
    .option("--since <when>", "only events since a duration ago (30s, 15m, 2h, 1d) or an ISO time")
    .option("--limit <n>", "at most the last N matching events (default: 50, and every one with --work-item; 0 = all)", parseCount)
    .addOption(new Option("--format <format>", "output format").choices(["table", "json", "jsonl"]).default("table"))
    .option("--json", "same as --format json", false)
    .option("--follow", "keep printing new events as they are written (Ctrl-C to stop)", false)
    .option("--types", "list the event catalog instead of events", false)
    .option("--file <path>", "read this log file instead of the configured one")
    .action(async (options: EventsOptions, command: Command) => {
      await (await import("./commands/events.js")).runEvents(globalsOf(command), options);
    });

  program
    .command("why")
    .description("what the-loop saw and decided about one work item, newest first, and the one thing that would move it now")
    .argument("<ref>", REF_HELP)
    .option("--json", "print as JSON", false)
    .action(async (ref: string, options: WhyOptions, command: Command) => {
      await (await import("./commands/why.js")).runWhy(globalsOf(command), ref, options);
    });

  const hooks = program
    .command("hooks")
    .description("list the lifecycle hooks the config declares, without importing or contacting any; `hooks points` lists the points")
    .option("--json", "print as JSON", false)
    .action(async (options: HooksOptions, command: Command) => {
      await (await import("./commands/hooks.js")).runHooksList(globalsOf(command), options);
    });
  hooks
    .command("points")
    .description("list the hook points, lifecycle and loop.*: when each fires, its facts and its decisions")
    .addOption(new Option("--family <family>", "only one family's points").choices(["lifecycle", "loop"]))
    .option("--json", "print the catalog as JSON", false)
    .action(async (_options: HookPointsOptions, command: Command) => {
      // Commander gives `--json` after `hooks points` to `hooks`, which has the same flag.
      (await import("./commands/hooks.js")).runHooksPoints(command.optsWithGlobals<HookPointsOptions>());
    });
  hooks
    .command("runs")
    .description("each recorded hook call, read from the event log: hook, event, work item, outcome (agh's names), duration and error")
    .option("--hook <name>", "only this hook's calls")
    .option("--event <point>", "only the calls at this point or loop event")
    .addOption(new Option("--outcome <outcome>", "only calls with this outcome").choices(["applied", "denied", "failed", "skipped", "dropped", "rejected"]))
    .option("--work-item <ref>", `only the calls about this work item (${REF_HELP})`)
    .option("--since <when>", "only calls since then: 15m, 2h, 1d, or an ISO-8601 time")
    .option("--limit <n>", "the last N calls (default 50, 0 for all)", parseCount)
    .option("--last <n>", "the same as --limit, by agh's name", parseCount)
    .option("--json", "print as JSON", false)
    .action(async (_options: HooksRunsOptions, command: Command) => {
      await (await import("./commands/hooks/runs.js")).runHooksRuns(globalsOf(command), command.optsWithGlobals<HooksRunsOptions>());
    });
  hooks
    .command("info")
    .description("one declared hook: its kind, executor, target, points, timeout, required and enabled, and its last runs")
    .argument("<name>", "the hook's name, as `the-loop hooks` lists it")
    .option("--json", "print as JSON", false)
    .action(async (name: string, _options: HooksInfoOptions, command: Command) => {
      await (await import("./commands/hooks/runs.js")).runHooksInfo(globalsOf(command), name, command.optsWithGlobals<HooksInfoOptions>());
    });
  hooks
    .command("events")
    .description("the points and loop events a hook can serve, one line each (`hooks points` describes each in full)")
    .option("--json", "print as JSON", false)
    .action(async (_options: HooksInfoOptions, command: Command) => {
      (await import("./commands/hooks/runs.js")).runHooksEvents(command.optsWithGlobals<HooksInfoOptions>());
    });
  hooks
    .command("test")
    .description(
      "call one declared hook once at a point, as the daemon would (same executor, timeout and env rules), and print what it answered and what the daemon would do; nothing is done with the answer, but the hook's own side effects happen",
    )
    .argument("<name>", "the hook's name, as `the-loop hooks` lists it")
    .requiredOption("--point <point>", "the lifecycle point or loop event to call it at (`the-loop hooks events`)")
    .option("--payload <file>", "the payload as a JSON object, from FILE or - for stdin (default: a sample payload of the point)")
    .option(
      "--work-item <ref>",
      `the payload the daemon would send at the point for this work item, from its records now (its graph run, its session; read only): ${REF_HELP}`,
    )
    .option("--json", "print as JSON", false)
    .action(async (name: string, _options: HooksTestOptions, command: Command) => {
      await (await import("./commands/hooks/try.js")).runHooksTest(globalsOf(command), name, command.optsWithGlobals<HooksTestOptions>());
    });

  const graph = program.command("graph").description("process graphs: the phases, gates and claims a started work item moves through (docs/graph.md)");
  graph
    .command("list")
    .description("list the graphs the config can run (built-in and declared under graphs), the default, and whether graphs are on")
    .option("--json", "print as JSON", false)
    .action(async (options: GraphListOptions, command: Command) => {
      await (await import("./commands/graph/definitions.js")).runGraphList(globalsOf(command), options);
    });
  graph
    .command("show")
    .description("show a graph's nodes and edges in words, as JSON, or as a Mermaid flowchart to paste into a comment")
    .argument("<name>", "the graph, e.g. work-item")
    .option("--mermaid", "print only the Mermaid flowchart (inside a ```mermaid block it renders on GitHub)", false)
    .option("--json", "print as JSON", false)
    .action(async (name: string, options: GraphShowOptions, command: Command) => {
      await (await import("./commands/graph/definitions.js")).runGraphShow(globalsOf(command), name, options);
    });
  graph
    .command("status")
    .description("where a work item is in its graph: node, phase, status, generation, why it waits, and its history")
    .argument("<ref>", REF_HELP)
    .option("--json", "print as JSON", false)
    .action(async (ref: string, options: GraphStatusOptions, command: Command) => {
      await (await import("./commands/graph/runs.js")).runGraphStatus(globalsOf(command), ref, options);
    });
  graph
    .command("complete")
    .description("claim the current node done (run by the agent in its session): the daemon runs the node's checks and answers whether the item moved")
    .argument("[ref]", "the work item (default: $THE_LOOP_WORK_ITEM)")
    .option("--node <id>", "the node claimed; refused when the item is elsewhere")
    .option("--timeout <seconds>", "how long to wait for the daemon's decision", "3900")
    .option("--json", "print as JSON", false)
    .action(async (ref: string | undefined, options: GraphCompleteOptions, command: Command) => {
      await (await import("./commands/graph/runs.js")).runGraphComplete(globalsOf(command), ref, options);
    });
  graph
    .command("force")
    .description("put a work item on a node of its graph, whatever its checks or gates say (audited: event, history, marked comment)")
    .argument("<ref>", REF_HELP)
    .requiredOption("--to <node>", "the node to put it on")
    .requiredOption("--reason <text>", "why (recorded and posted)")
    .option("--json", "print as JSON", false)
    .action(async (ref: string, options: GraphForceOptions, command: Command) => {
      await (await import("./commands/graph/runs.js")).runGraphForce(globalsOf(command), ref, options);
    });
  graph
    .command("approve")
    .description("answer the item's gate: approve, as the approve keyword in a comment would (audited: event, history, marked comment)")
    .argument("<ref>", REF_HELP)
    .option("--reason <text>", "why (recorded and posted)")
    .option("--json", "print as JSON", false)
    .action(async (ref: string, options: GraphAnswerOptions, command: Command) => {
      await (await import("./commands/graph/runs.js")).runGraphAnswer(globalsOf(command), ref, "approved", options);
    });
  graph
    .command("request-changes")
    .description("answer the item's gate: send the work back, as the request-changes keyword in a comment would (audited: event, history, marked comment)")
    .argument("<ref>", REF_HELP)
    .requiredOption("--reason <text>", "what to change (recorded and posted, for the agent to read)")
    .option("--json", "print as JSON", false)
    .action(async (ref: string, options: GraphAnswerOptions, command: Command) => {
      await (await import("./commands/graph/runs.js")).runGraphAnswer(globalsOf(command), ref, "changes-requested", options);
    });

  const capabilities = program
    .command("capabilities")
    .description(
      "capability bundles that add steps, contributions and gates at the loop points, installed with consent (docs/capabilities.md); a command one declares runs as `the-loop <its words> …`",
    );
  capabilities
    .command("add")
    .description("show everything a bundle runs; with --yes, declare it in the config at its current hash (again, to consent to a changed bundle)")
    .argument("<dir>", "the bundle's folder (holding capability.yaml or capability.json)")
    .option("--yes", "consent: declare the capability in the config", false)
    .option("--json", "print as JSON", false)
    .action(async (dir: string, options: CapabilitiesAddOptions, command: Command) => {
      await (await import("./commands/capabilities/capabilities.js")).runCapabilitiesAdd(globalsOf(command), dir, options);
    });
  capabilities
    .command("list")
    .description("list the installed capabilities: id, version, path, consented hash, and whether the bundle still matches it")
    .option("--json", "print as JSON", false)
    .action(async (options: CapabilitiesListOptions, command: Command) => {
      await (await import("./commands/capabilities/capabilities.js")).runCapabilitiesList(globalsOf(command), options);
    });
  capabilities
    .command("remove")
    .description("take an installed capability out of the config (its files stay)")
    .argument("<id>", "the capability's id (or its configured path)")
    .option("--json", "print as JSON", false)
    .action(async (id: string, options: CapabilitiesRemoveOptions, command: Command) => {
      await (await import("./commands/capabilities/capabilities.js")).runCapabilitiesRemove(globalsOf(command), id, options);
    });

  // The loop points' side of capabilities: what a session (or the daemon) asks at a point.
  const loop = program
    .command("loop")
    .description("capability hooks at the loop points: which are active at a point, and a gate's predicate evaluated (docs/capabilities.md)");
  loop
    .command("render-hooks")
    .description("the capability steps, contributions and gates active at a loop point, in dispatch order; --raw prints {point, activeHooks, rendered} as JSON")
    .argument(
      "<point>",
      "the loop point: discuss:pre, discuss:post, plan:pre, plan:post, execute:pre, execute:wave:pre, execute:wave:post, execute:post, verify:pre, verify:post, ship:pre, ship:post",
    )
    .option("--work-item <ref>", `${REF_HELP} (checked as a ref; the hooks do not depend on it yet)`)
    .option("--raw", "print the envelope as JSON, for a script or an agent to act on", false)
    .option("--json", "same as --raw", false)
    .action(async (point: string, options: LoopRenderHooksOptions, command: Command) => {
      await (await import("./commands/loop/render-hooks.js")).runLoopRenderHooks(globalsOf(command), point, options);
    });
  loop
    .command("predicate")
    .description("evaluate a gate's predicate, given as one argument of JSON, and print {block, message}; exit 2 when it cannot be evaluated")
    .argument("<json>", "the predicate as JSON, one argument: artifact-exists, checklist-complete, artifact-frontmatter-equals or command-exit-zero")
    .option("--cwd <dir>", "the directory the predicate looks at (default: the current one)")
    .option("--raw", "print the verdict as JSON, for a script")
    .action(async (json: string, options: LoopPredicateOptions, command: Command) => {
      await (await import("./commands/loop/predicate.js")).runLoopPredicate(globalsOf(command), json, options);
    });

  const task = program.command("task").description("the tasks of a plan, for execute:task (docs/capabilities.md)");
  task
    .command("resolve-content")
    .description("a task's content from the capability whose taskContentResolver owns its id's prefix; a failing resolver exits 1 (never a fallback)")
    .requiredOption("--plan <path>", "the plan holding the task (a Markdown checklist)")
    .requiredOption("--task-id <id>", "the task's id, such as jira-123")
    .option("--raw", "print the result as JSON, for a script")
    .action(async (options: TaskResolveContentOptions, command: Command) => {
      await (await import("./commands/task.js")).runTaskResolveContent(globalsOf(command), options);
    });

  const item = program
    .command("item")
    .description(
      "work items on the embedded local tracker (refs: local:project#7, or 7 or '#7' in the default project: quote a #, the shell drops it unquoted)",
    );
  const asOption = (): Option => new Option("--as <login>", "act as this login instead of the OS user (a local-testing aid)");
  item
    .command("new")
    .description("create a work item")
    .argument("<title>", "the title")
    .option("--body <text>", "the description")
    .option("--label <label>", "add a label (repeatable)", collect, [])
    .option("--project <name>", "local project (default: integrations.local.project)")
    .addOption(asOption())
    .option("--json", "print the new item as JSON", false)
    .action(async (title: string, options: ItemNewOptions, command: Command) => {
      await (await import("./commands/item.js")).runItemNew(globalsOf(command), title, options);
    });
  item
    .command("comment")
    .description("add a comment to a work item ('-' reads the text from stdin)")
    .argument("<ref>", REF_HELP)
    .argument("<text>", "the comment")
    .addOption(asOption())
    .option("--json", "print the new comment as JSON", false)
    .action(async (ref: string, text: string, options: ItemActOptions, command: Command) => {
      await (await import("./commands/item.js")).runItemComment(globalsOf(command), ref, text, options);
    });
  item
    .command("check")
    .description(
      "record a check on a work item, as CI reports one on its pull request: a failure is told to the item's live session (docs/github.md#ci-failures)",
    )
    .argument("<ref>", REF_HELP)
    .requiredOption("--name <name>", "the check's name, e.g. test")
    .option("--failed", "it failed", false)
    .option("--passed", "it passed (recorded; no one is told)", false)
    .option("--log <file>", "the failed job's log ('-' reads stdin); its last 64 KiB are kept")
    .option("--url <url>", "where a person sees it")
    .option("--commit <sha>", "the commit it ran on: a failure is told once per commit and check (default: once per recording)")
    .addOption(asOption())
    .option("--json", "print the recorded check as JSON", false)
    .action(async (ref: string, options: ItemCheckOptions, command: Command) => {
      await (await import("./commands/item.js")).runItemCheck(globalsOf(command), ref, options);
    });
  item
    .command("label")
    .description("add or remove labels")
    .argument("<ref>", REF_HELP)
    .option("--add <label>", "add a label (repeatable)", collect, [])
    .option("--remove <label>", "remove a label (repeatable)", collect, [])
    .addOption(asOption())
    .option("--json", "print the item as JSON", false)
    .action(async (ref: string, options: ItemLabelOptions, command: Command) => {
      await (await import("./commands/item.js")).runItemLabel(globalsOf(command), ref, options);
    });
  for (const [name, state, description] of [
    ["close", "closed", "close a work item"],
    ["reopen", "open", "reopen a closed work item"],
  ] as const) {
    item
      .command(name)
      .description(description)
      .argument("<ref>", REF_HELP)
      .addOption(asOption())
      .option("--json", "print the item as JSON", false)
      .action(async (ref: string, options: ItemActOptions, command: Command) => {
        await (await import("./commands/item.js")).runItemSetState(globalsOf(command), ref, state, options);
      });
  }
  item
    .command("list")
    .description("list work items")
    .addOption(new Option("--state <state>", "which items").choices(["open", "closed", "all"]).default("open"))
    .option("--label <label>", "only items carrying this label (repeatable; all must match)", collect, [])
    .option("--project <name>", "only this local project (default: every project)")
    .option("--json", "print as JSON", false)
    .action(async (options: ItemListOptions, command: Command) => {
      await (await import("./commands/item.js")).runItemList(globalsOf(command), options);
    });
  item
    .command("show")
    .description("show a work item with its labels and comments")
    .argument("<ref>", REF_HELP)
    .option("--json", "print as JSON", false)
    .action(async (ref: string, options: ItemShowOptions, command: Command) => {
      await (await import("./commands/item.js")).runItemShow(globalsOf(command), ref, options);
    });
  item
    .command("repair")
    .description("keep the readable lines of a local project's journal and move the unreadable ones aside (to journal.jsonl.damaged-<time>, never deleted)")
    .option("--project <name>", "local project (default: integrations.local.project)")
    .option("--json", "print the report as JSON", false)
    .action(async (options: ItemRepairOptions, command: Command) => {
      await (await import("./commands/item.js")).runItemRepair(globalsOf(command), options);
    });

  program
    .command("start")
    .description("start the daemon in the background with every enabled service; returns once each holds its lock")
    .option("--json", "print the result as JSON", false)
    .action(async (options: JsonOption, command: Command) => {
      await (await import("./commands/daemon.js")).runStart(globalsOf(command), options);
    });
  program
    .command("status")
    .description("show each service and every problem keeping it from its work, with its fix; exit 0 healthy, 1 not running, 3 running with problems")
    .option("--json", "print as JSON", false)
    .action(async (options: JsonOption, command: Command) => {
      await (await import("./commands/daemon.js")).runStatus(globalsOf(command), options);
    });
  program
    .command("dashboard")
    .description("print a one-time login URL for the running daemon's dashboard (docs/dashboard.md); it works once, then the browser holds the login")
    .option("--json", "print as JSON", false)
    .action(async (options: JsonOption, command: Command) => {
      await (await import("./commands/dashboard.js")).runDashboard(globalsOf(command), options);
    });
  program
    .command("stop")
    .description("stop the daemon: SIGTERM, let it drain queued work, wait for its locks to be released")
    .option("--timeout <seconds>", "how long to wait", parseCount, 30)
    .option("--json", "print the result as JSON", false)
    .action(async (options: StopOptions, command: Command) => {
      await (await import("./commands/daemon.js")).runStop(globalsOf(command), options);
    });
  program
    .command("serve")
    .description("run the daemon in the foreground (for systemd and containers); SIGTERM or Ctrl-C drains and stops")
    .action(async (_options: unknown, command: Command) => {
      await (await import("./commands/daemon.js")).runServe(globalsOf(command));
    });

  declareStateCommands(program, globalsOf);

  program
    .command("ask")
    .description("for an agent in a session: post a question on its work item; the next authorized comment is the answer")
    .argument("<question>", "the question")
    .option("--work-item <ref>", "the work item (default: $THE_LOOP_WORK_ITEM, set in every session)")
    .option("--json", "print the result as JSON", false)
    .action(async (question: string, options: AskOptions, command: Command) => {
      await (await import("./commands/ask.js")).runAsk(globalsOf(command), question, options);
    });
  program
    .command("mcp")
    .description("for an agent in a session: the-loop as a stdio MCP server (tools ask, graph_complete, graph_status, why), for its own work item")
    .action(async (_options: unknown, command: Command) => await (await import("./commands/mcp.js")).runMcp(globalsOf(command)));

  program
    .command("receive")
    .description(
      "run one GitHub webhook delivery (a payload copied from the webhook's settings page) through the router and print the decision; a dry run unless --dispatch",
    )
    .requiredOption("--event <name>", "the X-GitHub-Event header, e.g. issue_comment")
    .requiredOption("--payload <file>", "the delivery's JSON body ('-' reads stdin)")
    .option("--delivery <id>", "the X-GitHub-Delivery id (default: a fresh one)")
    .option("--dispatch", "carry the decision out (spawn, deliver, close) instead of only printing it", false)
    .option("--json", "print the result as JSON", false)
    .action(async (options: ReceiveOptions, command: Command) => {
      await (await import("./commands/receive.js")).runReceive(globalsOf(command), options);
    });

  const sessions = program.command("sessions").description("agent sessions, one per work item: list them, attach, start, pause, resume, stop, close");
  sessions
    .command("list")
    .description("list sessions with their status, each work item's last control command and, on a shared database, the daemon and host each runs on")
    .addOption(
      new Option("--status <status>", "only sessions in this state (live = active or paused)").choices(["active", "paused", "closed", "failed", "live"]),
    )
    .option("--json", "print as JSON", false)
    .action(async (options: SessionsListOptions, command: Command) => {
      await (await import("./commands/sessions/list.js")).runSessionsList(globalsOf(command), options);
    });
  sessions
    .command("attach")
    .description("attach this terminal to a session's tmux session (inside the sessions' tmux server: switch to it; inside another: say how to attach)")
    .requiredOption("--work-item <ref>", REF_HELP)
    .option("--read-only", "watch without being able to type", false)
    .option("--json", "for a session on another host: print the command that attaches to it as JSON (an argv array)", false)
    .action(async (options: SessionsAttachOptions, command: Command) => {
      await (await import("./commands/sessions/attach.js")).runSessionsAttach(globalsOf(command), options);
    });
  // Execution control from the CLI (docs/control.md): what the keyword in a comment does.
  const controlHelp = [
    "",
    "Acts as the local OS user and is recorded with source cli, as the keyword in a",
    "comment would be. Unless --no-comment, it then posts a comment on the work item",
    "carrying the keyword, a line saying it came from the CLI and the loop-prevention",
    "marker: the thread keeps the record, and neither the webhook receiver nor the",
    "poller acts on it again. Posting is best-effort: a failure warns, the command",
    "stands.",
    "",
    "Exit codes: 0 applied (or already so); 1 refused (nothing is recorded or",
    "posted), or the session could not be spawned (the start stands and is retried",
    "at the item's next event or daemon start); 2 usage error.",
  ].join("\n");
  for (const [name, what] of [
    ["start", "start execution: spawn a session for an armed work item here and now (or resume a paused one); refused when the item is not armed or closed"],
    ["pause", "pause the work item's session: its events are recorded and dropped until resume; with no session, nothing starts until a start"],
    ["resume", "resume a paused session, which is told to re-read the thread; refused when there is no session"],
    ["stop", "stop execution: close the session as a close of the item would; the item does not start again until a start"],
  ] as const) {
    const control = sessions
      .command(name)
      .description(what)
      .addHelpText("after", controlHelp)
      .option("--work-item <ref>", "the work item (default: $THE_LOOP_WORK_ITEM, set in every session)");
    if (name === "start") {
      control.option(
        "--graph <name>",
        "the process graph the item's run begins on, instead of graph.default (`the-loop graph list`); a run under way keeps its graph",
      );
      control.option(
        "--agent <harness>",
        "the harness the item's session runs, instead of the one its labels (routing.harnessByLabel) or routing.defaultHarness pick; one the config names",
      );
    }
    if (name === "resume") {
      control.option(
        "--budget <+N>",
        "raise the routing.budget limit the item was paused at by N before resuming (+Nk: thousands of tokens, +Nmin: minutes; docs/fleet.md#budgets)",
      );
    }
    control
      .option("--no-comment", "do not post the comment on the work item")
      .option("--json", "print the result as JSON", false)
      .action(async (options: SessionsControlOptions, command: Command) => {
        await (await import("./commands/sessions/sessions.js")).runSessionsControl(globalsOf(command), name, options);
      });
  }
  sessions
    .command("close")
    .description(
      "close a work item's session: end its harness, keep or kill its tmux session as configured; unlike stop, it records no control command and posts nothing",
    )
    .requiredOption("--work-item <ref>", REF_HELP)
    .option("--json", "print the result as JSON", false)
    .action(async (options: SessionsCloseOptions, command: Command) => {
      await (await import("./commands/sessions/sessions.js")).runSessionsClose(globalsOf(command), options);
    });
  sessions
    .command("link-pr")
    .description("bind a pull request to a work item, so the PR's events reach the work item's session (wins over inference)")
    .option("--work-item <ref>", "the work item (default: $THE_LOOP_WORK_ITEM, set in every session)")
    .requiredOption("--pull-request <pr>", "the pull request: a number in the work item's repository, owner/repo#N or a URL")
    .option("--json", "print the result as JSON", false)
    .action(async (options: SessionsLinkPrOptions, command: Command) => {
      await (await import("./commands/sessions/sessions.js")).runSessionsLinkPr(globalsOf(command), options);
    });

  return program;
}
