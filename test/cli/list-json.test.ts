import { existsSync } from "node:fs";
import { mkdir, readFile, rename, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { controlsWithoutSession, printSessionsDocument, renderedControls, renderedSessions } from "../../src/cli/commands/sessions/list-json.js";
import type { ListedSession, RenderedListing } from "../../src/cli/commands/sessions/list-json.js";
import { ControlStore } from "../../src/control/store.js";
import type { ControlRecord } from "../../src/control/types.js";
import type { RegistryListing } from "../../src/registry/listing.js";
import { listSessionRecords } from "../../src/registry/listing.js";
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

/** The control records the listing renders beside the sessions: one with nested values, one for an item without a session. */
const CONTROLS: ControlRecord[] = [
  {
    version: 1,
    ref: "local:demo#2",
    command: "pause",
    source: "comment",
    actor: 'alice "the" operator',
    requestedAt: "2026-01-01T00:00:00.000Z",
    effect: "paused",
    deliveryId: "d-1",
    clearedAt: "2026-01-02T00:00:00.000Z",
    clearedBy: "carol",
  },
  { version: 1, ref: "local:demo#9", command: "stop", source: "cli", actor: "bob", requestedAt: "2026-01-01T00:00:00.000Z", effect: "recorded" },
];
const controlsOf = (records: readonly ControlRecord[]): RenderedListing<string> => renderedControls(() => ({ records: [...records], problems: [] }));

/** The fields the listing adds after the control: nested, nullable. */
function addedTo(session: ListedSession): object {
  const number = Number(session.ref.split("#")[1]);
  return {
    graph: number === 1 ? { name: "default", node: "review", status: "waiting", phase: null } : null,
    usage: session.status === "active" ? { tokens: null, unreadable: "not read yet", minutes: 3, limits: { tokens: 10 } } : null,
  };
}

const REST = {
  controls: [{ version: 1, ref: "local:demo#9", command: "stop" }],
  queued: [],
  problems: [{ file: "/state/x.json", message: "not JSON" }],
};

const listedOf = (record: SessionRecord): ListedSession => ({
  ref: record.workItem.ref,
  status: record.status,
  createdAt: record.createdAt,
  harness: record.harness,
});

/** A session as stdout.json shows it: its record, then its control, then the other added fields. */
function shownSession(record: SessionRecord, controls: readonly ControlRecord[] = CONTROLS): object {
  return { ...record, control: controls.find((control) => control.ref === record.workItem.ref) ?? null, ...addedTo(listedOf(record)) };
}

/** What stdout.json writes for the same listing. */
function expectedText(records: readonly SessionRecord[], keep: (session: ListedSession) => boolean, rest: object): string {
  const sessions = records.filter((record) => keep(listedOf(record))).map((record) => shownSession(record));
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
const print = (
  listed: RenderedListing<ListedSession>,
  keep: (session: ListedSession) => boolean = ALL,
  rest: Record<string, unknown> = REST,
  controls: RenderedListing<string> = controlsOf(CONTROLS),
) => written(() => printSessionsDocument(listed, controls, keep, addedTo, rest));

const fromRecords = (records: SessionRecord[]): RenderedListing<ListedSession> => renderedSessions((): RegistryListing => ({ records, problems: [] }));
const fromFolder = (dir: string, cacheFile: string): RenderedListing<ListedSession> => renderedSessions(() => listSessionRecords(dir), { dir, cacheFile });

/** A registry folder holding `records`, dated back so that a listing may cache it (state/folder-cache.ts). */
async function folderWith(records: readonly SessionRecord[]): Promise<string> {
  const dir = join(await tempDir(), "sessions");
  await mkdir(dir, { recursive: true });
  for (const record of records) await writeFile(join(dir, `${workItemSlug(record.workItem.ref)}.json`), toJsonText(record));
  await settle(dir);
  return dir;
}

/** A control folder holding `records`, dated back as folderWith's is. */
async function controlFolderWith(records: readonly ControlRecord[]): Promise<string> {
  const dir = join(await tempDir(), "control");
  await mkdir(dir, { recursive: true });
  const store = new ControlStore({ dir });
  for (const record of records) await writeFile(store.pathFor(record.ref), toJsonText(record));
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
    const listed = fromRecords(RECORDS);
    expect(print(listed, keep)).toBe(expectedText(RECORDS, keep, REST));
  });

  it("is stdout.json's for an empty registry, and with nothing but sessions", () => {
    const listed = fromRecords([]);
    expect(print(listed)).toBe(expectedText([], ALL, REST));
    expect(print(fromRecords(RECORDS), ALL, {})).toBe(expectedText(RECORDS, ALL, {}));
  });

  it("is stdout.json's when the records come from the folder's cache", async () => {
    const dir = await folderWith(RECORDS);
    const cache = join(await tempDir(), "cache", "sessions-list.json.rendered");
    const fresh = fromFolder(dir, cache);
    expect(existsSync(cache)).toBe(true);
    const fromCache = fromFolder(dir, cache);
    expect(fromCache.entries).toEqual(fresh.entries);
    expect(print(fromCache)).toBe(expectedText(RECORDS, ALL, REST));
  });

  it("shows the listing's own fields where a record written by hand has fields of those names", () => {
    const odd = { ...sessionRecord(itemOf(5)), usage: "stale", control: { forged: true } } as SessionRecord;
    const document: unknown = JSON.parse(print(fromRecords([odd])));
    const { usage: _usage, control: _control, ...own } = odd as SessionRecord & { usage: unknown; control: unknown };
    expect(document).toEqual({ sessions: [shownSession({ ...own, version: 1 })], ...REST });
  });

  it("is redacted as stdout.json is when a secret is known, and keeps no rendering of it", async () => {
    const secret = "ghp_listingSecretValue0123456789";
    const leaky = sessionRecord(itemOf(6), { status: "failed", failureReason: `push refused for https://x:${secret}@github.com/o/r "quoted"` });
    const leakyControl: ControlRecord = { ...CONTROLS[1]!, ref: leaky.workItem.ref, actor: `bot ${secret}` };
    const dir = await folderWith([leaky]);
    const controlDir = await controlFolderWith([leakyControl]);
    const cache = join(await tempDir(), "cache");
    rememberSecret(secret);
    const controls = renderedControls(() => new ControlStore({ dir: controlDir }).list(), { dir: controlDir, cacheFile: join(cache, "control") });
    const text = print(fromFolder(dir, join(cache, "sessions")), ALL, REST, controls);
    expect(text).not.toContain(secret);
    expect(text).toContain("[redacted]");
    expect(text).toBe(written(() => stdout.json({ sessions: [shownSession(leaky, [leakyControl])], ...REST })));
    expect(existsSync(cache)).toBe(false);
  });
});

describe("the control records beside the sessions", () => {
  it("come from the control folder's cache while it is unchanged, and those of items without a session are listed apart", async () => {
    const controlDir = await controlFolderWith(CONTROLS);
    const cacheFile = join(await tempDir(), "cache", "control.rendered");
    const read = () => renderedControls(() => new ControlStore({ dir: controlDir }).list(), { dir: controlDir, cacheFile });
    const fresh = read();
    expect(existsSync(cacheFile)).toBe(true);
    // Edited in place, without a rename: the cache answers.
    await writeFile(new ControlStore({ dir: controlDir }).pathFor(CONTROLS[0]!.ref), "not json");
    const fromCache = read();
    expect(fromCache.problems).toEqual([]);
    expect(fromCache.entries.sort()).toEqual(fresh.entries.sort());
    const sessions = fromRecords(RECORDS);
    expect(print(sessions, ALL, REST, fromCache)).toBe(expectedText(RECORDS, ALL, REST));
    expect(controlsWithoutSession(fromCache, sessions)).toEqual([CONTROLS[1]]);
    expect(controlsWithoutSession(fromCache, fromRecords([]))).toEqual(expect.arrayContaining(CONTROLS));
  });
});

describe("the registry folder's rendered records, kept while the folder is unchanged", () => {
  it("answers from the cache, reading no record, until a write renames a file into the folder", async () => {
    const dir = await folderWith(RECORDS.slice(0, 2));
    const cache = join(await tempDir(), "cache", "sessions-list.json.rendered");
    fromFolder(dir, cache);
    // Edited in place, without the rename every registry write makes: the cache answers.
    const first = join(dir, `${workItemSlug(RECORDS[0]!.workItem.ref)}.json`);
    await writeFile(first, "not json");
    expect(fromFolder(dir, cache).entries.map((session) => session.ref)).toEqual(["local:demo#1", "local:demo#2"]);
    // A write as the registry makes it: a temporary file renamed over the record.
    const changed = sessionRecord(itemOf(1), { status: "paused" });
    await writeFile(`${first}.tmp`, toJsonText(changed));
    await rename(`${first}.tmp`, first);
    await settle(dir);
    expect(fromFolder(dir, cache).entries.map((session) => session.status)).toEqual(["paused", "paused"]);
    expect(print(fromFolder(dir, cache))).toBe(expectedText([changed, RECORDS[1]!], ALL, REST));
  });

  it("reads the folder again when the cache is cut short, and keeps nothing while a record is damaged", async () => {
    const dir = await folderWith(RECORDS);
    const cache = join(await tempDir(), "cache", "sessions-list.json.rendered");
    fromFolder(dir, cache);
    const whole = await readFile(cache);
    await writeFile(cache, whole.subarray(0, whole.length - 10));
    expect(print(fromFolder(dir, cache))).toBe(expectedText(RECORDS, ALL, REST));
    expect((await readFile(cache)).length).toBe(whole.length);
    await writeFile(join(dir, "broken.json"), "{");
    await settle(dir);
    const damaged = fromFolder(dir, cache);
    expect(damaged.problems).toHaveLength(1);
    expect(damaged.entries).toHaveLength(RECORDS.length);
    expect(fromFolder(dir, cache).problems).toHaveLength(1);
  });
});
