import { existsSync } from "node:fs";
import { mkdir, readFile, rename, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { printSessionsDocument, renderedFromFolder, renderedFromRecords } from "../../src/cli/commands/sessions/list-json.js";
import type { ListedSession, RenderedSessions } from "../../src/cli/commands/sessions/list-json.js";
import { stdout } from "../../src/cli/output.js";
import type { SessionRecord } from "../../src/registry/record.js";
import { forgetKnownSecrets, rememberSecret } from "../../src/secrets.js";
import { toJsonText } from "../../src/state/atomic.js";
import { parseWorkItemRef, workItemOf, workItemSlug } from "../../src/workitem/index.js";
import { sessionRecord } from "../support/builders.js";
import { tempDir } from "../support/temp.js";

/**
 * `sessions list --json` splices each record's own rendering into a document rendered without
 * them: what it writes must be exactly what `stdout.json` writes for the same listing.
 */

const itemOf = (number: number) =>
  workItemOf(parseWorkItemRef(`local:demo#${number}`), { kind: number % 2 === 0 ? "pull_request" : "issue", url: `file:///demo/${number}`, id: `${number}` });

const RECORDS: SessionRecord[] = [
  sessionRecord(itemOf(1)),
  sessionRecord(itemOf(2), { status: "paused", recentDeliveries: ["d-1", "d-2"] }),
  // Text a ticket or an agent put there: quotes, a backslash, a newline, a tab, a line separator, a brace on a line of its own.
  sessionRecord(itemOf(3), {
    status: "closed",
    closedAt: "2026-01-02T00:00:00.000Z",
    closeReason: 'said "done" \\ and\n    {\n left\t\u2028 ünïcödé 🎉',
  }),
  sessionRecord(itemOf(4), { status: "failed", failureReason: "exit 1", recentDeliveries: [] }),
];

/** The fields the listing adds to each session, as the command builds them: nested, nullable, with arrays. */
function addedTo(session: ListedSession): object {
  const number = Number(session.ref.split("#")[1]);
  return {
    control: number === 2 ? { version: 1, ref: session.ref, command: "pause", actor: "alice", tags: ["a", "b"], empty: {} } : null,
    graph: number === 1 ? { name: "default", node: "review", status: "waiting", phase: null } : null,
    usage: session.status === "active" ? { tokens: null, unreadable: "not read yet", minutes: 3, limits: {} } : null,
  };
}

const REST = {
  controls: [{ version: 1, ref: "local:demo#9", command: "stop" }],
  queued: [],
  problems: [{ file: "/state/x.json", message: "not JSON" }],
};

/** What stdout.json writes for the same listing: the records with the added fields after their own. */
function expectedText(records: readonly SessionRecord[], keep: (session: ListedSession) => boolean, rest: object): string {
  const listedOf = (record: SessionRecord): ListedSession => ({
    ref: record.workItem.ref,
    status: record.status,
    createdAt: record.createdAt,
    harness: record.harness,
  });
  const sessions = records.filter((record) => keep(listedOf(record))).map((record) => ({ ...record, ...addedTo(listedOf(record)) }));
  return `${JSON.stringify({ sessions, ...rest }, null, 2)}\n`;
}

/** Everything `run` writes to stdout, as text. */
function written(run: () => void): string {
  const chunks: Buffer[] = [];
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(Buffer.from(chunk));
    return true;
  });
  try {
    run();
  } finally {
    spy.mockRestore();
  }
  return Buffer.concat(chunks).toString("utf8");
}

const ALL = (): boolean => true;
const print = (listed: RenderedSessions, keep: (session: ListedSession) => boolean = ALL, rest: Record<string, unknown> = REST) =>
  written(() => printSessionsDocument(listed, keep, addedTo, rest));

/** A registry folder holding `records`, dated back so that a listing may cache it (state/folder-cache.ts). */
async function folderWith(records: readonly SessionRecord[]): Promise<string> {
  const dir = join(await tempDir(), "sessions");
  await mkdir(dir, { recursive: true });
  for (const record of records) await writeFile(join(dir, `${workItemSlug(record.workItem.ref)}.json`), toJsonText(record));
  await settle(dir);
  return dir;
}

async function settle(dir: string): Promise<void> {
  const past = new Date(Date.now() - 60_000);
  await utimes(dir, past, past);
}

afterEach(() => forgetKnownSecrets());

describe("sessions list --json's document", () => {
  it.each([
    ["every session", ALL],
    ["the live ones", (session: ListedSession) => session.status === "active" || session.status === "paused"],
    ["none of them", () => false],
  ])("is byte for byte what stdout.json writes, with %s kept", (_label, keep) => {
    const listed = renderedFromRecords({ records: RECORDS, problems: [] });
    expect(print(listed, keep)).toBe(expectedText(RECORDS, keep, REST));
  });

  it("is stdout.json's for an empty registry, and with nothing but sessions", () => {
    const listed = renderedFromRecords({ records: [], problems: [] });
    expect(print(listed)).toBe(expectedText([], ALL, REST));
    expect(print(renderedFromRecords({ records: RECORDS, problems: [] }), ALL, {})).toBe(expectedText(RECORDS, ALL, {}));
  });

  it("is stdout.json's when the records come from the folder's cache", async () => {
    const dir = await folderWith(RECORDS);
    const cache = join(await tempDir(), "cache", "sessions-list.json.rendered");
    const fresh = renderedFromFolder(dir, cache);
    expect(existsSync(cache)).toBe(true);
    const fromCache = renderedFromFolder(dir, cache);
    expect(fromCache.sessions).toEqual(fresh.sessions);
    expect(print(fromCache)).toBe(expectedText(RECORDS, ALL, REST));
  });

  it("shows the listing's own fields where a record written by hand has fields of those names", () => {
    const odd = { ...sessionRecord(itemOf(5)), usage: "stale", control: { forged: true } } as SessionRecord;
    const document: unknown = JSON.parse(print(renderedFromRecords({ records: [odd], problems: [] })));
    const { usage: _usage, control: _control, ...own } = odd as SessionRecord & { usage: unknown; control: unknown };
    expect(document).toEqual({
      sessions: [{ ...own, ...addedTo({ ref: "local:demo#5", status: "active", createdAt: odd.createdAt, harness: "claude" }) }],
      ...REST,
    });
  });

  it("is redacted as stdout.json is when a secret is known, and keeps no rendering of it", async () => {
    const secret = "ghp_listingSecretValue0123456789";
    const leaky = sessionRecord(itemOf(6), { status: "failed", failureReason: `push refused for https://x:${secret}@github.com/o/r "quoted"` });
    const dir = await folderWith([leaky]);
    const cache = join(await tempDir(), "cache", "sessions-list.json.rendered");
    rememberSecret(secret);
    const text = print(renderedFromFolder(dir, cache));
    expect(text).not.toContain(secret);
    expect(text).toContain("[redacted]");
    expect(text).toBe(
      written(() =>
        stdout.json({
          sessions: [{ ...leaky, ...addedTo({ ref: leaky.workItem.ref, status: "failed", createdAt: leaky.createdAt, harness: "claude" }) }],
          ...REST,
        }),
      ),
    );
    expect(existsSync(cache)).toBe(false);
  });
});

describe("the registry folder's rendered records, kept while the folder is unchanged", () => {
  it("answers from the cache, reading no record, until a write renames a file into the folder", async () => {
    const dir = await folderWith(RECORDS.slice(0, 2));
    const cache = join(await tempDir(), "cache", "sessions-list.json.rendered");
    renderedFromFolder(dir, cache);
    // Edited in place, without the rename every registry write makes: the cache answers.
    const first = join(dir, `${workItemSlug(RECORDS[0]!.workItem.ref)}.json`);
    await writeFile(first, "not json");
    expect(renderedFromFolder(dir, cache).sessions.map((session) => session.ref)).toEqual(["local:demo#1", "local:demo#2"]);
    // A write as the registry makes it: a temporary file renamed over the record.
    const changed = sessionRecord(itemOf(1), { status: "paused" });
    await writeFile(`${first}.tmp`, toJsonText(changed));
    await rename(`${first}.tmp`, first);
    await settle(dir);
    expect(renderedFromFolder(dir, cache).sessions.map((session) => session.status)).toEqual(["paused", "paused"]);
    expect(print(renderedFromFolder(dir, cache))).toBe(expectedText([changed, RECORDS[1]!], ALL, REST));
  });

  it("reads the folder again when the cache is cut short, and keeps nothing while a record is damaged", async () => {
    const dir = await folderWith(RECORDS);
    const cache = join(await tempDir(), "cache", "sessions-list.json.rendered");
    renderedFromFolder(dir, cache);
    const whole = await readFile(cache);
    await writeFile(cache, whole.subarray(0, whole.length - 10));
    expect(print(renderedFromFolder(dir, cache))).toBe(expectedText(RECORDS, ALL, REST));
    expect((await readFile(cache)).length).toBe(whole.length);
    await writeFile(join(dir, "broken.json"), "{");
    await settle(dir);
    const damaged = renderedFromFolder(dir, cache);
    expect(damaged.problems).toHaveLength(1);
    expect(damaged.sessions).toHaveLength(RECORDS.length);
    expect(renderedFromFolder(dir, cache).problems).toHaveLength(1);
  });
});
