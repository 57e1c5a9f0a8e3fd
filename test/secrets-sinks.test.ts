import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { stderr, stdout } from "../src/cli/output.js";
import { EventLog, MemoryEventSink } from "../src/events/log.js";
import { REDACTED, forgetKnownSecrets, rememberSecret, secretSpellings } from "../src/secrets.js";
import { REFUSAL_COMMENT_REASON_MAX, refusalText } from "../src/sessions/announce.js";
import { FileRecordStore } from "../src/state/record-store.js";
import type { RecordKind } from "../src/state/record-kind.js";
import { GitHubClient } from "../src/trackers/github/client.js";
import { GitHubTracker } from "../src/trackers/github/tracker.js";
import { LocalTracker } from "../src/trackers/local/index.js";
import { parseWorkItemRef } from "../src/workitem/index.js";
import { FakeGitHub } from "./support/fake-github.js";
import { tempDir } from "./support/temp.js";

/**
 * Each sink the-loop writes through, given text quoting a secret the process knows: none lets
 * any spelling of it through. The unit table of the spellings is test/secrets.test.ts; the whole
 * path, from a failing hook to the work item, is test/integration/secrets.test.ts.
 */

const TOKEN = 'hook+Tok/en="q\\u=';
const SPELLINGS = secretSpellings(TOKEN);
const ECHOED = `raw ${TOKEN} json ${JSON.stringify(TOKEN)} url ${encodeURIComponent(TOKEN)}`;

const fakes: FakeGitHub[] = [];

afterEach(async () => {
  forgetKnownSecrets();
  await Promise.all(fakes.splice(0).map((fake) => fake.stop()));
});

/** Every file under `dir`, as text. */
async function filesUnder(dir: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) {
      const path = join(entry.parentPath, entry.name);
      found.set(path, await readFile(path, "utf8"));
    }
  }
  return found;
}

function expectNoSpelling(text: string): void {
  for (const spelling of SPELLINGS) expect(text).not.toContain(spelling);
}

describe("the sinks", () => {
  it("the event log", async () => {
    rememberSecret(TOKEN);
    const path = join(await tempDir(), "events.jsonl");
    new EventLog({ path, source: "cli" }).emit("hooks.failed", { point: "work_item_start", hook: "gate", error: ECHOED, required: true });
    const text = await readFile(path, "utf8");
    expectNoSpelling(text);
    expect(JSON.parse(text)).toMatchObject({ error: `raw ${REDACTED} json "${REDACTED}" url ${REDACTED}` });
  });

  it("a record, and what the write answers", async () => {
    rememberSecret(TOKEN);
    const schema = z.strictObject({ ref: z.string(), note: z.string() });
    const kind: RecordKind<typeof schema> = { name: "note", itemField: "ref", schema, order: () => 0, remedy: "remove it" };
    const dir = join(await tempDir(), "notes");
    const store = new FileRecordStore({ kind, dir });
    const written = await store.transaction("local:demo#1", (tx) => tx.write({ ref: "local:demo#1", note: ECHOED }));
    expectNoSpelling(written.note);
    for (const text of (await filesUnder(dir)).values()) expectNoSpelling(text);
  });

  it("a comment on the local tracker: its journal and its snapshots", async () => {
    rememberSecret(TOKEN);
    const trackerDir = join(await tempDir(), "tracker");
    const tracker = new LocalTracker({ trackerDir, events: new MemoryEventSink() });
    const item = await tracker.openItem({ project: "demo", title: "Task", actor: "alice" });
    const posted = await tracker.postComment(parseWorkItemRef(item.item.ref), `the hook said: ${ECHOED}`);
    expectNoSpelling(posted.body);
    const files = await filesUnder(trackerDir);
    expect(files.size).toBeGreaterThan(0);
    for (const text of files.values()) expectNoSpelling(text);
  });

  it("a comment on GitHub, with the token the client itself sent", async () => {
    const token = "ghs_0123456789abcdefghijklmnopqrstuv";
    const gh = await FakeGitHub.start({ token });
    fakes.push(gh);
    gh.addRepo("octo/repo", { defaultBranch: "main", cloneUrl: "https://git.example/octo/repo.git" });
    const n = gh.addIssue("octo/repo", { title: "t", user: "alice" });
    const client = new GitHubClient({ apiUrl: gh.apiUrl, tokens: { token: () => Promise.resolve(token) }, spaceWrites: false, retries: 0 });
    const tracker = new GitHubTracker(client);
    const ref = parseWorkItemRef(`github:${gh.host}/octo/repo#${n}`);
    await tracker.getItem(ref);
    await tracker.postComment(ref, `echoed ${encodeURIComponent(token)} and ${Buffer.from(`x:${token}`).toString("base64")}`);
    const body = gh.comments("octo/repo", n)[0]?.body ?? "";
    expect(body).toMatch(/^echoed \[redacted\] and [A-Za-z0-9+/=]{0,3}\[redacted\][A-Za-z0-9+/=]{0,4}$/);
    for (const spelling of secretSpellings(token)) expect(body).not.toContain(spelling);
  });

  it("the CLI's stdout and stderr", () => {
    rememberSecret(TOKEN);
    const out = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    const err = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    stdout.line(ECHOED);
    stdout.json({ error: { message: ECHOED, details: [ECHOED] } });
    stderr.line(ECHOED);
    stderr.warn(ECHOED);
    stderr.error(ECHOED);
    const printed = [...out.mock.calls, ...err.mock.calls].map(([chunk]) => String(chunk)).join("");
    expectNoSpelling(printed);
    expect(JSON.parse(String(out.mock.calls[1]?.[0]))).toEqual({
      error: { message: `raw ${REDACTED} json "${REDACTED}" url ${REDACTED}`, details: [`raw ${REDACTED} json "${REDACTED}" url ${REDACTED}`] },
    });
  });
});

describe("the refusal comment", () => {
  const input = { ref: "local:demo#1", point: "work_item_start", hook: "gate", startKeyword: "/the-loop start" };

  it("quotes the hook's name and its reason on one line, redacted", () => {
    rememberSecret(TOKEN);
    const text = refusalText({ ...input, reason: `denied:\n${ECHOED}` });
    expectNoSpelling(text);
    expect(text).toContain("the lifecycle hook `gate` refused (`work_item_start`)");
    expect(text).toContain(`> denied: raw ${REDACTED} json "${REDACTED}" url ${REDACTED}\n`);
  });

  it.each([
    ["short", "no budget left", "no budget left"],
    ["at the bound", "x".repeat(REFUSAL_COMMENT_REASON_MAX), "x".repeat(REFUSAL_COMMENT_REASON_MAX)],
    ["past the bound", "x".repeat(REFUSAL_COMMENT_REASON_MAX + 1), `${"x".repeat(REFUSAL_COMMENT_REASON_MAX - 1)}…`],
    [
      "a secret across the bound",
      `${"x".repeat(REFUSAL_COMMENT_REASON_MAX - 5)}${TOKEN} and more`,
      `${"x".repeat(REFUSAL_COMMENT_REASON_MAX - 5)}${REDACTED.slice(0, 4)}…`,
    ],
    ["a character not cut in two", `${"x".repeat(REFUSAL_COMMENT_REASON_MAX - 2)}😀 tail`, `${"x".repeat(REFUSAL_COMMENT_REASON_MAX - 2)}…`],
    ["nothing", "   ", "no reason given"],
  ])("a reason %s", (_name, reason, quoted) => {
    rememberSecret(TOKEN);
    const text = refusalText({ ...input, reason });
    expect(text).toContain(`\n> ${quoted}\n`);
    expectNoSpelling(text);
  });
});
