import { readFile } from "node:fs/promises";
import { EXIT_USAGE, ExitError, errnoOf, messageOf } from "../errors.js";
import { boundExcerpt } from "../routing/inbound.js";
import type { InboundEvent } from "../routing/inbound.js";
import type { WorkItem } from "../workitem/index.js";

/**
 * What a session's agent is told: once when it starts (the boot prompt) and with every event
 * delivered afterwards. Both are `{{placeholder}}` templates a project may replace with its own
 * files (docs/prompts.md). They hold only what the event already showed on the work item, never
 * configuration or credentials.
 */

export interface PromptInput {
  readonly workItem: WorkItem;
  readonly event: InboundEvent;
  /** The work item's title when the caller knows it better than the event does. */
  readonly title?: string;
  /** The full command line an agent runs to ask a person, e.g. `the-loop ask --work-item local:demo#1 "your question"`. */
  readonly askCommand: string;
  /** The question the agent is waiting on: the event is likely its answer. */
  readonly awaitingQuestion?: string;
  /** Where the item's process graph run stands (`{{graph_context}}`); empty without one. */
  readonly graphContext?: string;
}

export interface PromptTemplates {
  readonly boot: string;
  readonly event: string;
}

export const BUILTIN_BOOT_TEMPLATE = `You were started by the-loop to work on {{work_item}}: {{title}}
{{url}}

The event that started this session ({{kind}} by {{actor}}):
{{excerpt}}

Read the work item (its description and comments) and do the work it asks for.

Later comments and reviews on {{work_item}} by authorized people arrive in this session as new input.

To ask a person something, run:
  {{ask_command}}
and then stop and wait: the answer arrives here as new input.
`;

export const BUILTIN_EVENT_TEMPLATE = `New event on {{work_item}} ({{kind}} by {{actor}}):
{{excerpt}}

{{answer_note}}
Continue the work with this in mind. To ask a person something, run \`{{ask_command}}\`, then stop and wait for the answer.
`;

export const BUILTIN_TEMPLATES: PromptTemplates = { boot: BUILTIN_BOOT_TEMPLATE, event: BUILTIN_EVENT_TEMPLATE };

/** Every placeholder promptValues produces; docs/prompts.md lists exactly these (a test keeps them equal). */
export const PROMPT_PLACEHOLDERS: readonly { readonly name: string; readonly meaning: string }[] = [
  { name: "work_item", meaning: "The work item's reference, e.g. `github:octo/repo#15` or `local:demo#1`." },
  { name: "title", meaning: "The work item's title; `(untitled)` when unknown." },
  { name: "url", meaning: "Where a person can look at the work item." },
  {
    name: "kind",
    meaning:
      "What happened: `opened`, `commented`, `reviewed`, `review_commented`, `labeled`, `unlabeled`, `closed`, `reopened` or `updated`; `started from the CLI` for a session `the-loop sessions start` began.",
  },
  { name: "actor", meaning: "The login of whoever caused the event; `(unknown)` for status events and deleted accounts." },
  { name: "delivery_id", meaning: "The event's unique delivery id." },
  { name: "body", meaning: "The comment or review text, bounded in length; empty when the event carries none." },
  {
    name: "excerpt",
    meaning:
      "A bounded excerpt of the event, one `key: value` per line. An event on a pull request delivered to another work item's session starts with `pull_request: #12 (https://…)`.",
  },
  {
    name: "pull_request",
    meaning:
      "The pull request the event is on, as `#12 (https://…)` (with `owner/repo` before the `#` when it is in another repository than the work item); empty when the event is on none.",
  },
  { name: "ask_command", meaning: "The command the agent runs to ask a person a question on the work item." },
  {
    name: "answer_note",
    meaning: "When the agent is waiting on a question it asked: a sentence saying this event may answer it, quoting the question; otherwise empty.",
  },
  {
    name: "graph_context",
    meaning:
      "With the process graph on: the item's graph, node, status and generation and what to do at the node (how to claim it); empty without a graph run. The boot prompt also ends with the node's assignment.",
  },
];

const PLACEHOLDER = /\{\{[ \t]*([A-Za-z0-9_]+)[ \t]*\}\}/g;

/**
 * Replaces each `{{name}}` (spaces inside the braces allowed) in one pass over the template: a
 * value is never scanned again, so a comment quoting `{{work_item}}` reaches the agent as typed
 * and cannot pull other values in. An unknown name stays as written, so a typo shows in the
 * prompt instead of silently vanishing.
 */
export function renderTemplate(template: string, values: Readonly<Record<string, string>>): string {
  // A replacer function, not a replacement string, so `$&` and friends in a value stay literal.
  return template.replace(PLACEHOLDER, (written: string, name: string) => (Object.hasOwn(values, name) ? (values[name] ?? written) : written));
}

/** The `{{names}}` a template uses that promptValues does not produce: for warning about typos. */
export function unknownPlaceholders(template: string): string[] {
  const known = new Set(PROMPT_PLACEHOLDERS.map((placeholder) => placeholder.name));
  const unknown = new Set<string>();
  for (const match of template.matchAll(PLACEHOLDER)) {
    const name = match[1];
    if (name !== undefined && !known.has(name)) unknown.add(name);
  }
  return [...unknown];
}

export function promptValues(input: PromptInput): Record<string, string> {
  const { event, workItem } = input;
  const title = input.title ?? event.title;
  const pullRequest = pullRequestName(event, workItem);
  // An agent whose work item has several pull requests is told which one a review is on; in the
  // PR's own session that is the work item itself.
  const excerpt = pullRequest !== "" && event.pullRequest?.ref !== workItem.ref ? { pull_request: pullRequest, ...event.excerpt } : event.excerpt;
  return {
    work_item: workItem.ref,
    title: title === undefined || title.trim() === "" ? "(untitled)" : title,
    url: workItem.url,
    kind: startedFromCli(event) ? "started from the CLI" : event.kind,
    actor: event.actor ?? "(unknown)",
    delivery_id: event.deliveryId,
    body: bounded(event.body),
    excerpt: Object.entries(excerpt)
      .map(([key, value]) => `${key}: ${value}`)
      .join("\n"),
    pull_request: pullRequest,
    ask_command: input.askCommand,
    answer_note:
      input.awaitingQuestion === undefined || input.awaitingQuestion.trim() === ""
        ? ""
        : `This event may answer the question you asked: "${bounded(input.awaitingQuestion)}"`,
    graph_context: input.graphContext ?? "",
  };
}

/**
 * A start given at the command line: no one commented, though the stand-in event the-loop makes
 * for it is a comment (src/dispatch/commands.ts). Its excerpt names where the command came from;
 * a start given by comment and retried later keeps `comment`.
 */
function startedFromCli(event: InboundEvent): boolean {
  return event.source === "cli" && event.excerpt["source"] === "cli";
}

export function renderBootPrompt(templates: PromptTemplates, input: PromptInput): string {
  return renderTemplate(templates.boot, promptValues(input));
}

/** The prompt for an event delivered into a live session: the event template, or the notice of a linked pull request's closing. */
export function renderEventPrompt(templates: PromptTemplates, input: PromptInput): string {
  const values = promptValues(input);
  if (isLinkedPullRequestClosing(input.event, input.workItem)) {
    return renderTemplate(PULL_REQUEST_CLOSED_TEMPLATE, { ...values, outcome: closingOutcome(input.event) });
  }
  return renderTemplate(templates.event, values);
}

/**
 * What the session of a work item is told when a pull request linked to it closes (the router
 * delivers such a closing rather than ending the session). Built in, like the resume note, not a
 * template a project replaces: it carries no text anyone wrote on the tracker — only the PR, how
 * it closed and who closed it — so it is safe to deliver whoever closed the PR.
 */
export const PULL_REQUEST_CLOSED_TEMPLATE = `Pull request {{pull_request}} was {{outcome}}.
It is linked to {{work_item}}. This session stays open until {{work_item}} itself is closed. Continue with whatever of the work is left, if anything. To ask a person something, run \`{{ask_command}}\`, then stop and wait for the answer.
`;

/** Whether `event` is a pull request's closing reaching the session of another work item (one the PR is linked to). */
export function isLinkedPullRequestClosing(event: InboundEvent, workItem: Pick<WorkItem, "ref">): boolean {
  return event.kind === "closed" && event.pullRequest !== undefined && event.pullRequest.ref !== workItem.ref;
}

/** `merged by bob`, `closed without merging`: who is left out when the ingress could not tell. */
export function closingOutcome(event: Pick<InboundEvent, "actor" | "pullRequest">): string {
  const how = event.pullRequest?.merged === true ? "merged" : event.pullRequest?.merged === false ? "closed without merging" : "closed";
  return event.actor === null ? how : `${how} by ${event.actor}`;
}

/**
 * The pull request an event is on as the agent of `workItem` reads it: `#12 (url)`, with the
 * PR's repository before the `#` when it is not the work item's; empty for an event on none.
 */
function pullRequestName(event: InboundEvent, workItem: WorkItem): string {
  const ref = event.pullRequest?.ref;
  if (ref === undefined) return "";
  const pull = event.workItems.find((item) => item.ref === ref);
  if (pull === undefined) return ref;
  const sameRepository = pull.host === workItem.host && pull.repository === workItem.repository;
  const name = sameRepository ? `#${pull.number}` : `${pull.repository}#${pull.number}`;
  return pull.url === "" ? name : `${name} (${pull.url})`;
}

/**
 * What a resumed session is told (docs/control.md#the-keywords). Built in, not a template: it carries no event, only the
 * fact of the resume. Events suppressed while the session was paused are never replayed, so the
 * agent is sent back to the thread for what it missed.
 */
const RESUME_NOTE_TEMPLATE = `Execution of {{work_item}} was resumed by {{actor}} ({{source}}). Events that arrived while it was paused were not delivered: re-read the work item's thread at {{url}} before you continue.
`;

/**
 * Added when pull requests are linked to the session: their events reach it too, so they were
 * dropped while it was paused just the same.
 */
export const RESUME_NOTE_PULL_REQUESTS_TEMPLATE = `Events on the pull requests linked to it were not delivered either: re-read {{pull_requests}} too.
`;

export interface ResumeNoteInput {
  readonly workItem: Pick<WorkItem, "ref" | "url">;
  /** Who resumed it: a tracker login, or the local OS user. */
  readonly actor: string;
  /** `comment` or `cli`. */
  readonly source: string;
  /** The pull requests whose events the session receives (its record's `pullRequests`). */
  readonly pullRequests?: readonly { readonly ref: string; readonly url?: string | undefined }[];
}

export function renderResumeNote(input: ResumeNoteInput): string {
  const note = renderTemplate(RESUME_NOTE_TEMPLATE, {
    work_item: input.workItem.ref,
    actor: input.actor,
    source: input.source,
    url: input.workItem.url,
  });
  const pullRequests = (input.pullRequests ?? []).map((pr) => (pr.url === undefined ? pr.ref : `${pr.ref} (${pr.url})`));
  if (pullRequests.length === 0) return note;
  return note + renderTemplate(RESUME_NOTE_PULL_REQUESTS_TEMPLATE, { pull_requests: pullRequests.join(", ") });
}

/** A configured template file that cannot be used: a configuration error (exit 2). */
export class PromptTemplateError extends ExitError {
  override readonly name: string = "PromptTemplateError";
  constructor(
    message: string,
    readonly file: string,
    readonly configKey: PromptTemplateKey,
  ) {
    super(message, EXIT_USAGE, "config");
  }
}

export type PromptTemplateKey = "routing.spawnPromptTemplate" | "routing.promptTemplate";

/**
 * Reads the configured template files (absolute paths, resolved by the caller against the project
 * directory); an unset one keeps the built-in. Read once at start-up so a bad path fails there,
 * not at the first spawn.
 */
export async function loadPromptTemplates(options: { readonly bootFile?: string; readonly eventFile?: string }): Promise<PromptTemplates> {
  const [boot, event] = await Promise.all([
    options.bootFile === undefined ? BUILTIN_BOOT_TEMPLATE : readTemplate(options.bootFile, "routing.spawnPromptTemplate"),
    options.eventFile === undefined ? BUILTIN_EVENT_TEMPLATE : readTemplate(options.eventFile, "routing.promptTemplate"),
  ]);
  return { boot, event };
}

async function readTemplate(file: string, configKey: PromptTemplateKey): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    const why = errnoOf(error) === "ENOENT" ? "does not exist" : `cannot be read (${messageOf(error)})`;
    throw new PromptTemplateError(`${configKey}: the prompt template ${file} ${why}`, file, configKey);
  }
  // An empty prompt would start an agent with no instructions at all.
  if (text.trim() === "") throw new PromptTemplateError(`${configKey}: the prompt template ${file} is empty`, file, configKey);
  return text;
}

/** Bounded as an excerpt field is, so a prompt never carries more of one text than a log line does. */
function bounded(text: string | null): string {
  return boundExcerpt({ text }).text ?? "";
}
