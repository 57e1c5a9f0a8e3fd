import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { NotifySinkKind } from "../config/notify-schema.js";
import { redactKnownSecretsIn } from "../secrets.js";
import { githubItemUrl } from "../workitem/item.js";
import { parseWorkItemRef } from "../workitem/ref.js";
import type { Notice } from "./moments.js";

/**
 * A notice shaped for its sink: the link a person opens, the one text they read, and the JSON
 * body each kind of sink takes. Pure: the same notice always makes the same body.
 *
 * - `slack`: `{text}`. Slack reads `&`, `<` and `>` as markup (`<!channel>` pings everyone,
 *   `<url|label>` hides a link), so they are escaped as Slack's docs say, in the whole text.
 * - `discord`: `{content, allowed_mentions: {parse: []}}`. The empty allow-list means no text in
 *   the message can ping anyone (`@everyone`, a role); the agent's and the ticket's words are
 *   also escaped of Discord's markdown, so they cannot dress up a link. Discord takes at most
 *   2,000 characters.
 * - `json`: `text` as for Slack, `content` and `allowed_mentions` as for Discord, so either
 *   service takes the body as it is (each reads its own key), and `the_loop` with every field,
 *   for any other receiver.
 */

/** Discord refuses a `content` longer than this. */
export const DISCORD_MAX_CONTENT = 2_000;

/**
 * Where a person looks at the item: its page on GitHub; the local tracker's item file — or, when
 * the local tracker is in the state database (`localItemsUrl`), the URL it gives its items there.
 */
export function linkOf(workItem: string, localTrackerDir: string, localItemsUrl?: (project: string) => string): string | undefined {
  let ref;
  try {
    ref = parseWorkItemRef(workItem);
  } catch {
    // Not a ref (an event written by another version): the notice names the item without a link.
    return undefined;
  }
  // An issue's URL serves a pull request of the same number too (GitHub redirects it).
  if (ref.tracker === "github") return githubItemUrl(ref, "issue");
  if (localItemsUrl !== undefined) return `${localItemsUrl(ref.project)}/${ref.number}.json`;
  return pathToFileURL(join(localTrackerDir, ref.project, "items", `${ref.number}.json`)).href;
}

const MOMENT_TITLES: Readonly<Record<Notice["moment"], string>> = {
  "gate-waiting": "Gate waiting",
  question: "Question",
  blocked: "Blocked",
  budget: "Budget",
  "failed-to-start": "Failed to start",
  "ci-gave-up": "CI gave up",
  done: "Done",
};

/** Slack's three markup characters, escaped as its docs ask. */
export function escapeSlack(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Discord's markdown and mention characters, each escaped with a backslash so it shows as written. */
export function escapeDiscord(text: string): string {
  return text.replace(/[\\*_~`|>[\]()#<@]/g, (character) => `\\${character}`);
}

/** The lines of the message, with `escapeDetail` applied to the hostile part. */
function lines(notice: Notice, link: string | undefined, escapeDetail: (text: string) => string): string[] {
  return [
    `[the-loop] ${MOMENT_TITLES[notice.moment]}: ${notice.headline}`,
    ...(notice.detail !== undefined ? [`> ${escapeDetail(notice.detail)}`] : []),
    ...(link !== undefined ? [`Link: ${link}`] : [`Item: ${notice.workItem}`]),
    `To move it on: ${notice.action.say}`,
  ];
}

/** The text a person reads, plain (the `the_loop.text` of a json body, tests). */
export function plainText(notice: Notice, link: string | undefined): string {
  return lines(notice, link, (text) => text).join("\n");
}

function slackText(notice: Notice, link: string | undefined): string {
  return escapeSlack(lines(notice, link, (text) => text).join("\n"));
}

function discordContent(notice: Notice, link: string | undefined): string {
  const text = lines(notice, link, escapeDiscord).join("\n");
  return text.length <= DISCORD_MAX_CONTENT ? text : `${text.slice(0, DISCORD_MAX_CONTENT - 1)}…`;
}

/** The JSON body posted to a sink of `kind`; every string redacted of the process's known secrets. */
export function bodyFor(kind: NotifySinkKind, notice: Notice, link: string | undefined): Record<string, unknown> {
  const noMentions = { parse: [] as string[] };
  let body: Record<string, unknown>;
  if (kind === "slack") body = { text: slackText(notice, link) };
  else if (kind === "discord") body = { content: discordContent(notice, link), allowed_mentions: noMentions };
  else {
    body = {
      text: slackText(notice, link),
      content: discordContent(notice, link),
      allowed_mentions: noMentions,
      the_loop: {
        moment: notice.moment,
        work_item: notice.workItem,
        link: link ?? null,
        event: notice.eventType,
        at: notice.at,
        headline: notice.headline,
        detail: notice.detail ?? null,
        comment: notice.action.comment ?? null,
        alternative: notice.action.alternative ?? null,
        say: notice.action.say,
        text: plainText(notice, link),
      },
    };
  }
  return redactKnownSecretsIn(body);
}
