import { randomUUID } from "node:crypto";
import { promises as fs } from "node:fs";
import type { Dirent } from "node:fs";
import { NotFoundError, errnoOf } from "../../errors.js";
import { redactKnownSecrets } from "../../secrets.js";
import type { EventSink } from "../../events/index.js";
import { fsyncDirectory, withLock, writeJsonAtomic } from "../../state/index.js";
import type { LockOptions } from "../../state/index.js";
import { RefError, checkLocalProject, formatWorkItemRef, hasLabel, labelMatches } from "../../workitem/index.js";
import type { LocalRef, WorkItemRef } from "../../workitem/index.js";
import { WorkItemNotFoundError } from "../tracker.js";
import type { ChangeBatch, ItemState, ItemThread, SelfLogin, Tracker, TrackerChangeFeed, TrackerComment, TrackerScope, WorkItemState } from "../tracker.js";
import { decodeCursor, encodeCursor, feedPosition } from "./cursor.js";
import { CorruptTrackerFileError, LocalTrackerInputError, NotLocalRefError } from "./errors.js";
import { exists, highestItemNumber, isProjectName, itemNumbers, itemPath, projectFiles, readMeta, readSnapshot, readSnapshotSync } from "./files.js";
import type { ProjectFiles } from "./files.js";
import { appendJournalLine, readJournal, readJournalTail, requireSound, scanJournal, truncateJournal } from "./journal.js";
import { SELF_LOGIN, checkActor, checkBody, checkCommentBody, checkLabelCount, checkLabels, checkTitle } from "./limits.js";
import { JournalMismatchError, applyLine } from "./records.js";
import { repairJournal } from "./repair.js";
import { watchJournals } from "./watch.js";
import { checkedLine, recordChange } from "./item-events.js";
import type { CheckInput } from "./item-events.js";
import type { ItemSnapshot, JournalLine, ProjectMeta } from "./records.js";
import { changeOf, commentOf, localItemOf, localWorkItem, stateOf, threadOf } from "./shapes.js";
import type { LocalItem } from "./shapes.js";

export type { LocalItem } from "./shapes.js";

export interface LocalTrackerOptions {
  /** `<state root>/tracker`: one folder per project below it. */
  readonly trackerDir: string;
  /** Where each change is recorded as an `item.*` event; the sink decides the event source. */
  readonly events: EventSink;
  readonly now?: () => Date;
  /** How long a writer waits for the project lock (default: withLock's). */
  readonly lock?: LockOptions;
}

export interface OpenItemInput {
  readonly project: string;
  readonly title: string;
  readonly body?: string;
  readonly labels?: readonly string[];
  readonly actor: string;
}

export interface LabelChange {
  readonly add?: readonly string[];
  readonly remove?: readonly string[];
}

export interface LabelChangeResult {
  readonly item: LocalItem;
  /** As stored: a removed label is named in the item's own spelling. */
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** No-ops, which wrote nothing. */
  readonly alreadyPresent: readonly string[];
  readonly absent: readonly string[];
}

export interface StateChangeResult {
  readonly item: LocalItem;
  /** False when the item already was in that state: nothing was written. */
  readonly changed: boolean;
}

export interface ListItemsFilter {
  /** One project; every project when omitted. */
  readonly project?: string;
  readonly state?: ItemState | "all";
  /** Items carrying every one of these labels (case-insensitively). */
  readonly labels?: readonly string[];
}

/** What `repair` did to one project's journal. */
export interface RepairReport {
  readonly project: string;
  readonly journal: string;
  /** Readable lines, kept in the journal in their order. */
  readonly kept: number;
  /** Lines moved aside (a torn last line among them), in file order. */
  readonly moved: readonly { readonly line: number; readonly reason: string }[];
  /** Whether the journal ended in a torn line (moved aside with the others). */
  readonly torn: boolean;
  /** The file the moved lines were written to, next to the journal; undefined when nothing moved. */
  readonly aside: string | undefined;
}

/** Where a project's journal stands, as a writer under the lock sees it. */
export interface Head {
  lastSeq: number;
  lastNumber: number;
  lastTs: string | undefined;
}

export type LineDraft = (seq: number, ts: string) => JournalLine;

/**
 * The embedded tracker: work items as files under `<trackerDir>/<project>/`, no network, no
 * credentials. Each project's append-only journal is the source of truth and the change feed;
 * item snapshots and meta.json are derived from it and may lag it by at most the last line (a
 * crash between the append and their rewrite), which the next writer applies and every reader
 * applies in memory. See docs/local-tracker.md for the crash-safety argument.
 */
export class LocalTracker implements Tracker, TrackerChangeFeed {
  readonly kind = "local" as const;
  protected readonly trackerDir: string;
  protected readonly events: EventSink;
  protected readonly now: () => Date;
  private readonly lockOptions: LockOptions | undefined;
  private readonly projectFiles = new Map<string, ProjectFiles>();

  constructor(options: LocalTrackerOptions) {
    this.trackerDir = options.trackerDir;
    this.events = options.events;
    this.now = options.now ?? (() => new Date());
    this.lockOptions = options.lock;
  }

  // ---- the Tracker and TrackerChangeFeed interfaces --------------------------------------

  async changesSince(scope: TrackerScope, cursor: string | undefined): Promise<ChangeBatch> {
    const projects = await this.projectsInScope(scope);
    if (cursor === undefined) {
      // First sight: what is already there is history, not news.
      const positions = new Map<string, number>();
      for (const project of projects) {
        const tail = await readJournalTail(this.files(project).journal);
        if (tail.last) positions.set(project, tail.last.seq);
      }
      return { changes: [], cursor: encodeCursor(positions) };
    }
    const positions = decodeCursor(cursor);
    const pending: { project: string; line: JournalLine }[] = [];
    for (const project of projects) {
      const lines = await readJournal(this.files(project).journal);
      const lastSeq = lines.at(-1)?.seq ?? 0;
      let after = positions.get(project) ?? 0;
      // Past the journal's end: meta.json's seqFloor says whether a repair kept those seqs used.
      if (lastSeq < after) after = feedPosition(after, lastSeq, (await readMeta(this.files(project)))?.seqFloor ?? 0);
      for (const line of lines) if (line.seq > after) pending.push({ project, line });
      if (lastSeq > 0) positions.set(project, lastSeq);
      else positions.delete(project);
    }
    // Timestamps never go backwards within a project (see commit), so this keeps each project's
    // seq order while interleaving projects in the order things happened.
    pending.sort(
      (a, b) =>
        (a.line.ts < b.line.ts ? -1 : a.line.ts > b.line.ts ? 1 : 0) || (a.project < b.project ? -1 : a.project > b.project ? 1 : 0) || a.line.seq - b.line.seq,
    );
    return { changes: pending.map(({ project, line }) => changeOf(this.files(project), line)), cursor: encodeCursor(positions) };
  }

  watchChanges(scope: TrackerScope, onChange: () => void, onUnwatchable: (problem: string) => void): () => void {
    return watchJournals(this.trackerDir, scope.repositories, onChange, { onUnwatchable });
  }

  async getItem(ref: WorkItemRef): Promise<WorkItemState> {
    const local = this.localRef(ref);
    return stateOf(this.files(local.project), await this.readCurrentItem(local));
  }

  async postComment(ref: WorkItemRef, body: string): Promise<TrackerComment> {
    // What the-loop posts may quote text a hook or a server echoed a secret in (src/secrets.ts).
    return this.addComment(ref, redactKnownSecrets(body), SELF_LOGIN);
  }

  async addLabel(ref: WorkItemRef, label: string): Promise<void> {
    await this.changeLabels(ref, { add: [label] }, SELF_LOGIN);
  }

  async removeLabel(ref: WorkItemRef, label: string): Promise<void> {
    await this.changeLabels(ref, { remove: [label] }, SELF_LOGIN);
  }

  async selfLogin(): Promise<SelfLogin> {
    return { kind: "known", login: SELF_LOGIN };
  }

  // ---- local-only operations -------------------------------------------------------------

  async openItem(input: OpenItemInput): Promise<LocalItem> {
    const project = this.checkProject(input.project);
    const title = checkTitle(input.title);
    const body = checkBody(input.body ?? "");
    const labels = checkLabels(input.labels ?? []);
    checkLabelCount(labels.length);
    const actor = checkActor(input.actor);
    const itemId = randomUUID();
    return this.mutate(project, async (files, head) => {
      const number = head.lastNumber + 1;
      if (await this.storedSnapshot(head, project, number)) {
        throw new CorruptTrackerFileError(files.meta, `it hands out #${number} next, but items/${number}.json already exists`);
      }
      const snapshot = await this.commit(project, head, undefined, (seq, ts) => ({
        seq,
        ts,
        kind: "opened",
        number,
        itemId,
        actor,
        labels,
        state: "open",
        title,
        body,
      }));
      return localItemOf(this.files(project), snapshot);
    });
  }

  async addComment(ref: WorkItemRef, body: string, actor: string): Promise<TrackerComment> {
    const local = this.localRef(ref);
    checkCommentBody(body);
    checkActor(actor);
    await this.requireProject(local);
    return this.mutate(local.project, async (_files, head) => {
      const snapshot = await this.requireSnapshot(head, local);
      const next = await this.commit(local.project, head, snapshot, (seq, ts) => ({
        seq,
        ts,
        kind: "commented",
        number: local.number,
        itemId: snapshot.id,
        actor,
        labels: snapshot.labels,
        state: snapshot.state,
        comment: { id: `${local.project}:c${seq}`, body },
      }));
      const stored = next.comments.at(-1);
      if (!stored) throw new Error("a committed comment is missing from its item");
      return commentOf(localWorkItem(this.files(local.project), next), stored);
    });
  }

  /** Records a check on the item (`the-loop item check`): one journal line, one change of the feed. */
  async recordCheck(ref: WorkItemRef, check: CheckInput, actor: string): Promise<LocalItem> {
    const local = this.localRef(ref);
    checkActor(actor);
    await this.requireProject(local);
    return this.mutate(local.project, async (_files, head) => {
      const snapshot = await this.requireSnapshot(head, local);
      const next = await this.commit(local.project, head, snapshot, (seq, ts) => checkedLine(seq, ts, snapshot, actor, check));
      return localItemOf(this.files(local.project), next);
    });
  }

  /**
   * Removes, then adds, each label as its own change (one journal line, one event). Labels the
   * item already has, or lacks, are reported back and write nothing.
   */
  async changeLabels(ref: WorkItemRef, change: LabelChange, actor: string): Promise<LabelChangeResult> {
    const local = this.localRef(ref);
    const add = checkLabels(change.add ?? []);
    const remove = checkLabels(change.remove ?? []);
    const both = add.filter((label) => hasLabel(remove, label));
    if (both.length > 0) throw new LocalTrackerInputError(`cannot both add and remove the label "${both[0]}"`);
    checkActor(actor);
    await this.requireProject(local);
    return this.mutate(local.project, async (_files, head) => {
      let snapshot = await this.requireSnapshot(head, local);
      const toRemove: string[] = [];
      const absent: string[] = [];
      for (const label of remove) {
        const stored = snapshot.labels.find((existing) => labelMatches(existing, label));
        if (stored === undefined) absent.push(label);
        else toRemove.push(stored);
      }
      const toAdd: string[] = [];
      const alreadyPresent: string[] = [];
      for (const label of add) (hasLabel(snapshot.labels, label) ? alreadyPresent : toAdd).push(label);
      checkLabelCount(snapshot.labels.length - toRemove.length + toAdd.length);

      const step = async (kind: "labeled" | "unlabeled", label: string, labels: string[]): Promise<void> => {
        const current = snapshot;
        snapshot = await this.commit(local.project, head, current, (seq, ts) => ({
          seq,
          ts,
          kind,
          number: local.number,
          itemId: current.id,
          actor,
          labels,
          state: current.state,
          label,
        }));
      };
      for (const label of toRemove) {
        await step(
          "unlabeled",
          label,
          snapshot.labels.filter((existing) => existing !== label),
        );
      }
      for (const label of toAdd) await step("labeled", label, [...snapshot.labels, label]);
      return { item: localItemOf(this.files(local.project), snapshot), added: toAdd, removed: toRemove, alreadyPresent, absent };
    });
  }

  async addLabels(ref: WorkItemRef, labels: readonly string[], actor: string): Promise<LabelChangeResult> {
    return this.changeLabels(ref, { add: labels }, actor);
  }

  async removeLabels(ref: WorkItemRef, labels: readonly string[], actor: string): Promise<LabelChangeResult> {
    return this.changeLabels(ref, { remove: labels }, actor);
  }

  async setState(ref: WorkItemRef, state: ItemState, actor: string): Promise<StateChangeResult> {
    const local = this.localRef(ref);
    checkActor(actor);
    await this.requireProject(local);
    return this.mutate(local.project, async (_files, head) => {
      const snapshot = await this.requireSnapshot(head, local);
      if (snapshot.state === state) return { item: localItemOf(this.files(local.project), snapshot), changed: false };
      const next = await this.commit(local.project, head, snapshot, (seq, ts) => ({
        seq,
        ts,
        kind: state === "closed" ? "closed" : "reopened",
        number: local.number,
        itemId: snapshot.id,
        actor,
        labels: snapshot.labels,
        state,
      }));
      return { item: localItemOf(this.files(local.project), next), changed: true };
    });
  }

  async listItems(filter: ListItemsFilter = {}): Promise<LocalItem[]> {
    const projects = filter.project === undefined ? await this.listProjects() : [this.checkProject(filter.project)];
    const state = filter.state ?? "open";
    const labels = checkLabels(filter.labels ?? []);
    const items: LocalItem[] = [];
    for (const project of projects) {
      for (const snapshot of await this.readProjectItems(project)) {
        if (state !== "all" && snapshot.state !== state) continue;
        if (!labels.every((label) => hasLabel(snapshot.labels, label))) continue;
        items.push(localItemOf(this.files(project), snapshot));
      }
    }
    return items;
  }

  async getItemWithComments(ref: WorkItemRef): Promise<LocalItem> {
    const local = this.localRef(ref);
    return localItemOf(this.files(local.project), await this.readCurrentItem(local));
  }

  /** Tracker.recentComments: the item's title and its last `limit` comments, oldest first. */
  async recentComments(ref: WorkItemRef, limit: number): Promise<ItemThread> {
    return threadOf(await this.getItemWithComments(ref), limit);
  }

  /** The projects that have a journal, sorted. */
  async listProjects(): Promise<string[]> {
    let entries: Dirent[];
    try {
      entries = await fs.readdir(this.trackerDir, { withFileTypes: true });
    } catch (error) {
      if (errnoOf(error) === "ENOENT") return [];
      throw error;
    }
    const projects: string[] = [];
    for (const entry of entries) {
      if (!entry.isDirectory() || !isProjectName(entry.name)) continue;
      if (await exists(this.files(entry.name).journal)) projects.push(entry.name);
    }
    return projects.sort();
  }

  /**
   * Keeps every readable line of a project's journal and moves the others (a torn last line
   * among them) to a file next to it, named with the time; then recovers as a writer does.
   * Records `item.repaired` when it moved something; a sound journal is left as it is.
   */
  async repair(projectName: string): Promise<RepairReport> {
    const project = this.checkProject(projectName);
    const files = this.files(project);
    if (!(await exists(files.journal))) throw new NotFoundError(`the local project "${project}" has no journal (${files.journal})`);
    return withLock(
      files.journal,
      async () => {
        const repair = await repairJournal(files, this.now());
        const moved = repair.moved.map(({ line, reason }) => ({ line, reason }));
        if (repair.aside !== undefined) {
          this.events.emit("item.repaired", {
            project,
            journal: files.journal,
            kept: repair.kept,
            moved: moved.length,
            torn: repair.torn,
            aside: repair.aside,
          });
        }
        await this.recover(project, files);
        return { project, journal: files.journal, kept: repair.kept, moved, torn: repair.torn, aside: repair.aside };
      },
      this.lockOptions,
    );
  }

  // ---- writing ---------------------------------------------------------------------------

  /**
   * Runs a write under the project's cross-process lock, after repairing what a crashed writer
   * may have left: a torn last line, or a committed last line not yet applied.
   */
  protected async mutate<T>(project: string, operation: (files: ProjectFiles, head: Head) => Promise<T>): Promise<T> {
    const files = this.files(project);
    return withLock(
      files.journal,
      async () => {
        const head = await this.recover(project, files);
        return operation(files, head);
      },
      this.lockOptions,
    );
  }

  private async recover(project: string, files: ProjectFiles): Promise<Head> {
    // The whole journal is read, not just its tail: a damaged line anywhere would make every
    // later read of the feed fail, so nothing is appended after one (issue 15, item 7).
    const scan = requireSound(files.journal, await scanJournal(files.journal));
    if (scan.size > scan.completeLength) await truncateJournal(files.journal, scan.completeLength);
    const meta = await readMeta(files);
    const last = scan.lines.at(-1);
    // A repair moved the journal's last lines aside: their seqs stay used.
    const repairedEnd = meta !== undefined && (meta.seqFloor ?? 0) >= meta.lastSeq && (last?.seq ?? 0) <= meta.lastSeq;
    if (repairedEnd) return { lastSeq: meta.lastSeq, lastNumber: meta.lastNumber, lastTs: last?.ts };
    if (!last) {
      if (meta && meta.lastSeq > 0) {
        throw new CorruptTrackerFileError(files.journal, `it holds no change, but meta.json records ${meta.lastSeq}`);
      }
      return { lastSeq: 0, lastNumber: meta?.lastNumber ?? 0, lastTs: undefined };
    }
    if (meta) {
      if (last.seq < meta.lastSeq) {
        throw new CorruptTrackerFileError(files.journal, `it ends at change ${last.seq}, but meta.json records ${meta.lastSeq}`);
      }
      if (last.seq === meta.lastSeq) return { lastSeq: meta.lastSeq, lastNumber: meta.lastNumber, lastTs: last.ts };
      if (last.seq > meta.lastSeq + 1) {
        throw new CorruptTrackerFileError(
          files.meta,
          `it records change ${meta.lastSeq}, but the journal ends at ${last.seq} (only the last change can be unapplied)`,
        );
      }
    }
    // The last change was committed, then the writer stopped before applying it (or meta.json
    // is gone): apply it now, before anything new is appended.
    const snapshot = await readSnapshot(files, last.number);
    if (snapshot && snapshot.seq > last.seq) {
      throw new CorruptTrackerFileError(itemPath(files, last.number), `it is at change ${snapshot.seq}, beyond the journal's last (${last.seq})`);
    }
    if (!snapshot || snapshot.seq < last.seq) {
      await writeJsonAtomic(itemPath(files, last.number), this.applyPending(files.journal, snapshot, last));
    }
    const lastNumber = Math.max(meta ? meta.lastNumber : await highestItemNumber(files), last.number);
    await writeJsonAtomic(files.meta, { lastSeq: last.seq, lastNumber } satisfies ProjectMeta);
    return { lastSeq: last.seq, lastNumber, lastTs: last.ts };
  }

  /**
   * Commits one change: append the line (the commit point), then bring the item snapshot and
   * meta.json up to it, then record the event. Called only under the project lock.
   */
  private async commit(project: string, head: Head, snapshot: ItemSnapshot | undefined, draft: LineDraft): Promise<ItemSnapshot> {
    const seq = head.lastSeq + 1;
    const now = this.now().toISOString();
    // A clock stepped back must not reorder the feed: timestamps never decrease within a project.
    const ts = head.lastTs !== undefined && head.lastTs > now ? head.lastTs : now;
    const line = draft(seq, ts);
    const next = applyLine(snapshot, line);
    await this.store(project, head, line, next);
    head.lastSeq = seq;
    head.lastNumber = Math.max(head.lastNumber, line.number);
    head.lastTs = ts;
    recordChange(this.events, project, line);
    return next;
  }

  /** Stores a committed change: the journal line (the commit point), then the item's snapshot and meta.json. */
  protected async store(project: string, head: Head, line: JournalLine, next: ItemSnapshot): Promise<void> {
    const files = this.files(project);
    await appendJournalLine(files.journal, line);
    if (line.seq === 1) await fsyncDirectory(files.dir);
    await writeJsonAtomic(itemPath(files, line.number), next);
    await writeJsonAtomic(files.meta, { lastSeq: line.seq, lastNumber: Math.max(head.lastNumber, line.number) } satisfies ProjectMeta);
  }

  // ---- reading ---------------------------------------------------------------------------

  // Paths and URLs are computed once per project: a listing asks for them a thousand times.
  protected files(project: string): ProjectFiles {
    let files = this.projectFiles.get(project);
    if (!files) {
      files = projectFiles(this.trackerDir, project);
      this.projectFiles.set(project, files);
    }
    return files;
  }

  /**
   * The item as of now, without the lock. The journal tail is read before the snapshot: if the
   * tail's change is newer than the snapshot then, the snapshot is exactly the state before it,
   * because every earlier change was applied before the tail's line was appended.
   */
  protected async readCurrentItem(local: LocalRef): Promise<ItemSnapshot> {
    const tail = await readJournalTail(this.files(local.project).journal);
    const snapshot = await readSnapshot(this.files(local.project), local.number);
    const current = this.withPending(local.project, snapshot, tail.last, local.number);
    if (!current) throw new WorkItemNotFoundError(formatWorkItemRef(local), await this.missingItemHint(local));
    return current;
  }

  protected async missingItemHint(local: LocalRef): Promise<string> {
    const files = this.files(local.project);
    if (!(await exists(files.journal))) return `the local project "${local.project}" has no items`;
    const lastNumber = (await readMeta(files))?.lastNumber ?? 0;
    return lastNumber > 0 ? `the items of "${local.project}" are #1 to #${lastNumber}` : "";
  }

  /** Every item of a project, current, by number (same tail-first rule as readCurrentItem). */
  protected async readProjectItems(project: string): Promise<ItemSnapshot[]> {
    const files = this.files(project);
    const tail = await readJournalTail(files.journal);
    const numbers = await itemNumbers(files);
    const pending = tail.last;
    if (pending?.kind === "opened" && !numbers.includes(pending.number)) numbers.push(pending.number);
    numbers.sort((a, b) => a - b);
    // Read synchronously: for many small files that is far cheaper than one promise round trip
    // per file (see readJsonFileSync), and a listing is short either way.
    return numbers.flatMap((number) => this.withPending(project, readSnapshotSync(files, number), pending, number) ?? []);
  }

  private withPending(project: string, snapshot: ItemSnapshot | undefined, last: JournalLine | undefined, number: number): ItemSnapshot | undefined {
    if (!last || last.number !== number) return snapshot;
    if (snapshot && snapshot.seq >= last.seq) return snapshot;
    return this.applyPending(this.files(project).journal, snapshot, last);
  }

  private applyPending(journal: string, snapshot: ItemSnapshot | undefined, line: JournalLine): ItemSnapshot {
    try {
      return applyLine(snapshot, line);
    } catch (error) {
      if (error instanceof JournalMismatchError) throw new CorruptTrackerFileError(journal, `its last line does not fit: ${error.message}`);
      throw error;
    }
  }

  protected async requireProject(local: LocalRef): Promise<void> {
    // Checked before taking the lock, which would otherwise create the project's folder.
    if (!(await exists(this.files(local.project).journal))) {
      throw new WorkItemNotFoundError(formatWorkItemRef(local), `the local project "${local.project}" has no items`);
    }
  }

  /** Item `number`'s snapshot as stored, read by the writer at `head` under the project's lock. */
  protected async storedSnapshot(_head: Head, project: string, number: number): Promise<ItemSnapshot | undefined> {
    return readSnapshot(this.files(project), number);
  }

  private async requireSnapshot(head: Head, local: LocalRef): Promise<ItemSnapshot> {
    const snapshot = await this.storedSnapshot(head, local.project, local.number);
    if (!snapshot) throw new WorkItemNotFoundError(formatWorkItemRef(local), await this.missingItemHint(local));
    return snapshot;
  }

  private async projectsInScope(scope: TrackerScope): Promise<string[]> {
    if (scope.repositories === undefined) return this.listProjects();
    return [...new Set(scope.repositories.map((name) => this.checkProject(name)))].sort();
  }

  // ---- refs ------------------------------------------------------------------------------

  protected checkProject(name: string): string {
    try {
      return checkLocalProject(name);
    } catch (error) {
      if (error instanceof RefError) throw new LocalTrackerInputError(error.message);
      throw error;
    }
  }

  private localRef(ref: WorkItemRef): LocalRef {
    if (ref.tracker !== "local") throw new NotLocalRefError(formatWorkItemRef(ref));
    const project = this.checkProject(ref.project);
    if (!Number.isSafeInteger(ref.number) || ref.number < 1) {
      throw new LocalTrackerInputError(`invalid work item number ${ref.number}`);
    }
    return { tracker: "local", project, number: ref.number };
  }
}
