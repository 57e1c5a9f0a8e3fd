import { afterEach, describe, expect, it } from "vitest";
import { DISCORD_MAX_CONTENT, bodyFor, escapeDiscord, escapeSlack, linkOf, plainText } from "../../src/notify/message.js";
import type { Notice } from "../../src/notify/moments.js";
import { forgetKnownSecrets, rememberSecret } from "../../src/secrets.js";

afterEach(() => forgetKnownSecrets());

const NOTICE: Notice = {
  moment: "gate-waiting",
  workItem: "github:octo/repo#7",
  eventType: "graph.waiting",
  at: "2026-12-02T08:00:00.000Z",
  headline: 'github:octo/repo#7 waits for a person at the gate "review" (graph spec-review)',
  detail: "<!channel> @everyone see [here](https://evil.example) & *now*",
  action: {
    comment: "the-loop:approve",
    alternative: "the-loop:request-changes",
    say: "Comment `the-loop:approve` on the item to approve it, or `the-loop:request-changes` to send it back.",
  },
};
const LINK = "https://github.com/octo/repo/issues/7";

describe("linkOf", () => {
  it.each([
    ["github:octo/repo#7", "https://github.com/octo/repo/issues/7"],
    ["github:ghe.example.com/octo/repo#12", "https://ghe.example.com/octo/repo/issues/12"],
    ["local:demo#3", "file:///state/tracker/demo/items/3.json"],
    ["not a ref", undefined],
  ])("%s → %s", (ref, link) => {
    expect(linkOf(ref, "/state/tracker")).toBe(link);
  });

  it("links a local item to the URL its tracker gives it in the state database, not to a file", () => {
    expect(linkOf("local:demo#3", "/state/tracker", (project) => `the-loop://local/${project}/items`)).toBe("the-loop://local/demo/items/3.json");
    expect(linkOf("github:octo/repo#7", "/state/tracker", () => "unused")).toBe("https://github.com/octo/repo/issues/7");
  });
});

describe("the body each kind of sink takes", () => {
  it("slack: {text} alone, Slack's markup characters escaped so the text cannot ping or hide a link", () => {
    const body = bodyFor("slack", NOTICE, LINK);
    expect(Object.keys(body)).toEqual(["text"]);
    const text = body.text as string;
    expect(text).toContain("&lt;!channel&gt;");
    expect(text).not.toContain("<!channel>");
    expect(text).toContain("&amp; *now*");
    expect(text).toContain(`Link: ${LINK}`);
    expect(text).toContain("`the-loop:approve`");
    expect(text.split("\n")[0]).toBe('[the-loop] Gate waiting: github:octo/repo#7 waits for a person at the gate "review" (graph spec-review)');
  });

  it("discord: {content, allowed_mentions: {parse: []}}, the hostile detail escaped of markdown", () => {
    const body = bodyFor("discord", NOTICE, LINK);
    expect(Object.keys(body).sort()).toEqual(["allowed_mentions", "content"]);
    expect(body.allowed_mentions).toEqual({ parse: [] });
    const content = body.content as string;
    expect(content).toContain("\\@everyone");
    expect(content).toContain("\\[here\\]\\(https://evil.example\\)");
    expect(content).toContain("\\*now\\*");
    // The-loop's own words keep their code spans: the keyword shows as code.
    expect(content).toContain("`the-loop:approve`");
    expect(content).toContain(`Link: ${LINK}`);
  });

  it("discord: at most 2,000 characters", () => {
    const body = bodyFor("discord", { ...NOTICE, detail: "y".repeat(3_000) }, LINK);
    expect((body.content as string).length).toBe(DISCORD_MAX_CONTENT);
  });

  it("json: Slack's text, Discord's content and mentions, and every field under the_loop", () => {
    const body = bodyFor("json", NOTICE, LINK);
    expect(body.text).toBe(bodyFor("slack", NOTICE, LINK).text);
    expect(body.content).toBe(bodyFor("discord", NOTICE, LINK).content);
    expect(body.allowed_mentions).toEqual({ parse: [] });
    expect(body.the_loop).toEqual({
      moment: "gate-waiting",
      work_item: "github:octo/repo#7",
      link: LINK,
      event: "graph.waiting",
      at: "2026-12-02T08:00:00.000Z",
      headline: NOTICE.headline,
      detail: NOTICE.detail,
      comment: "the-loop:approve",
      alternative: "the-loop:request-changes",
      say: NOTICE.action.say,
      text: plainText(NOTICE, LINK),
    });
    // One JSON document, as posted.
    expect(JSON.parse(JSON.stringify(body))).toEqual(body);
  });

  it("json: a notice without a link or a comment says null, and names the item instead", () => {
    const done: Notice = {
      moment: "done",
      workItem: "local:demo#1",
      eventType: "graph.completed",
      at: "",
      headline: "done",
      action: { say: "Nothing is needed." },
    };
    const body = bodyFor("json", done, undefined);
    expect(body.the_loop).toMatchObject({ link: null, comment: null, alternative: null, detail: null });
    expect(body.text).toContain("Item: local:demo#1");
  });

  it("redacts every secret the process knows from each body", () => {
    const secret = "https://hooks.example.com/services/T000/B000/very-secret-path";
    rememberSecret(secret);
    const leaky = { ...NOTICE, detail: `the sink is ${secret}` };
    for (const kind of ["json", "slack", "discord"] as const) {
      const text = JSON.stringify(bodyFor(kind, leaky, LINK));
      expect(text, kind).not.toContain("very-secret-path");
      expect(text, kind).toContain("[redacted]");
    }
  });
});

describe("escaping", () => {
  it.each([
    ["a & b < c > d", "a &amp; b &lt; c &gt; d"],
    ["<@U123|x>", "&lt;@U123|x&gt;"],
  ])("slack: %j → %j", (input, output) => {
    expect(escapeSlack(input)).toBe(output);
  });

  it.each([
    ["**bold** _it_", "\\*\\*bold\\*\\* \\_it\\_"],
    ["<@123> @here", "\\<\\@123\\> \\@here"],
    ["`code` ~~x~~ ||spoiler||", "\\`code\\` \\~\\~x\\~\\~ \\|\\|spoiler\\|\\|"],
    ["# heading", "\\# heading"],
    ["a \\ b", "a \\\\ b"],
  ])("discord: %j → %j", (input, output) => {
    expect(escapeDiscord(input)).toBe(output);
  });
});
