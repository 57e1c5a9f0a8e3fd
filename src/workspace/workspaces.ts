import { lstat, mkdir, rename, rm } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { EXIT_FAILURE, ExitError, errnoOf, messageOf } from "../errors.js";
import type { EventSink } from "../events/log.js";
import type { SessionWorkspace } from "../registry/record.js";
import { withLock } from "../state/lock.js";
import type { RepositoryInfo } from "../trackers/tracker.js";
import { parseWorkItemRef, repositoryOf, workItemSlug } from "../workitem/index.js";
import type { WorkItem } from "../workitem/index.js";
import { Git, GitError, UNTRUSTED_REPOSITORY_CONFIG, redactUrl } from "./git.js";
import type { WorkspaceProvider, WorkspaceRequest } from "./provider.js";

/**
 * Checkouts for the sessions of GitHub work items, all under one root:
 *
 *   <root>/<host>/<owner>/<repo>                              shared clone (worktree strategy)
 *   <root>/.worktrees/<host>/<owner>/<repo>/<slug>            a work item's worktree
 *   <root>/.work-items/<slug>/<host>/<owner>/<repo>           a work item's full clone (clone strategy)
 *
 * Names under the root never start with "." except the two folders above and the lock and
 * staging entries, so no repository can land on top of them. Everything that touches a shared
 * clone holds its lock — in this process and across processes — because the daemon and the CLI
 * may prepare checkouts of one repository at the same moment.
 */

export type WorkspaceStrategy = SessionWorkspace["strategy"];

export interface WorkspacesOptions {
  /** Absolute folder of every clone and checkout. */
  readonly root: string;
  readonly strategy: WorkspaceStrategy;
  readonly keepCheckoutOnClose: boolean;
  /** Longest any one git command may run. */
  readonly gitTimeoutMs: number;
  readonly events: EventSink;
  /** Where a work item's repository is fetched from (the tracker knows). */
  readonly repository: (workItem: WorkItem) => Promise<RepositoryInfo>;
  /** The git program (default `git`). */
  readonly git?: string;
  /** The environment git runs with (default: this process's). */
  readonly env?: NodeJS.ProcessEnv;
}

export class WorkspaceError extends ExitError {
  override readonly name: string = "WorkspaceError";
  constructor(
    message: string,
    /** The work item's canonical ref. */
    readonly workItem: string,
    /** The git command behind the failure, when one failed. */
    readonly git?: GitError,
  ) {
    super(message, EXIT_FAILURE, "failure");
  }
}

/** Where one repository's checkouts live. */
export interface RepositoryLayout {
  /** `<host>/<owner>/<repo>` as folder names. */
  readonly key: string;
  /** `owner/repo`, for messages. */
  readonly repository: string;
  readonly host: string;
  readonly sharedClone: string;
  /** What the cross-process lock is taken on (its `.lock` sits next to the shared clone). */
  readonly lockTarget: string;
  /** A clone in progress, renamed into place only once complete. */
  readonly sharedStaging: string;
}

export interface ItemLayout extends RepositoryLayout {
  readonly slug: string;
  readonly worktree: string;
  /** `<root>/.work-items/<slug>`: everything the clone strategy made for this item. */
  readonly itemDir: string;
  readonly itemClone: string;
  readonly itemStaging: string;
  readonly itemLockTarget: string;
}

const COMPONENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const WORKTREES_DIR = ".worktrees";
const WORK_ITEMS_DIR = ".work-items";
/** Pull request heads that may never reach git as an argument: an option, a shorthand, control text. */
function unsafeBranch(name: string): boolean {
  return /^-|@\{|\s|\\/.test(name) || [...name].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f);
}

function component(value: string, what: string, ref: string): string {
  if (!COMPONENT.test(value) || value === "." || value === "..") {
    throw new WorkspaceError(
      `cannot prepare a checkout for ${ref}: its ${what} "${value}" cannot be a folder name (letters, digits, ".", "_" and "-" only)`,
      ref,
    );
  }
  return value;
}

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== "" && !isAbsolute(rel) && rel.split(sep)[0] !== "..";
}

/** The folders of one work item's checkouts under `root`, each checked to stay inside it. */
export function workspaceLayout(root: string, item: { readonly ref: string; readonly host: string; readonly repository: string }): ItemLayout {
  const ref = item.ref;
  const host = component(item.host.replace(/:/g, "_"), "host", ref);
  const [ownerText = "", repoText = "", ...rest] = item.repository.split("/");
  if (rest.length > 0) {
    throw new WorkspaceError(`cannot prepare a checkout for ${ref}: "${item.repository}" is not owner/repo`, ref);
  }
  const owner = component(ownerText, "owner", ref);
  const repo = component(repoText.replace(/\.git$/i, ""), "repository name", ref);
  const slug = component(workItemSlug(ref), "slug", ref);
  const top = resolve(root);
  const layout: ItemLayout = {
    key: `${host}/${owner}/${repo}`,
    repository: `${owner}/${repo}`,
    host: item.host,
    sharedClone: join(top, host, owner, repo),
    lockTarget: join(top, host, owner, `.${repo}`),
    sharedStaging: join(top, host, owner, `.${repo}.cloning`),
    slug,
    worktree: join(top, WORKTREES_DIR, host, owner, repo, slug),
    itemDir: join(top, WORK_ITEMS_DIR, slug),
    itemClone: join(top, WORK_ITEMS_DIR, slug, host, owner, repo),
    itemStaging: join(top, WORK_ITEMS_DIR, slug, host, owner, `.${repo}.cloning`),
    itemLockTarget: join(top, WORK_ITEMS_DIR, `.${slug}`),
  };
  for (const path of [
    layout.sharedClone,
    layout.lockTarget,
    layout.sharedStaging,
    layout.worktree,
    layout.itemDir,
    layout.itemClone,
    layout.itemStaging,
    layout.itemLockTarget,
  ]) {
    if (!isInside(top, path)) {
      throw new WorkspaceError(`cannot prepare a checkout for ${ref}: ${path} would lie outside the workspace root ${top}`, ref);
    }
  }
  return layout;
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if (errnoOf(error) === "ENOENT" || errnoOf(error) === "ENOTDIR") return false;
    throw error;
  }
}

/** An in-process mutex per key: the cross-process lock alone would let one process race itself. */
class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, critical: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const tail = new Promise<void>((done) => {
      release = done;
    });
    const chained = previous.then(() => tail);
    this.tails.set(key, chained);
    await previous;
    try {
      return await critical();
    } finally {
      release();
      if (this.tails.get(key) === chained) this.tails.delete(key);
    }
  }
}

interface Prepared {
  readonly workspace: SessionWorkspace;
  readonly reused: boolean;
}

/** Facts gathered while preparing, worth telling only if the checkout cannot be made. */
type Notes = string[];

export class Workspaces implements WorkspaceProvider {
  private readonly root: string;
  private readonly git: Git;
  private readonly mutex = new KeyedMutex();

  constructor(private readonly options: WorkspacesOptions) {
    if (!isAbsolute(options.root)) throw new Error(`the workspace root must be an absolute path, not "${options.root}"`);
    this.root = resolve(options.root);
    this.git = new Git({
      timeoutMs: options.gitTimeoutMs,
      config: UNTRUSTED_REPOSITORY_CONFIG,
      ...(options.git === undefined ? {} : { binary: options.git }),
      ...(options.env === undefined ? {} : { env: options.env }),
    });
  }

  async prepare(workItem: WorkItem, request: WorkspaceRequest): Promise<SessionWorkspace | undefined> {
    if (workItem.tracker !== "github") return undefined;
    const ref = workItem.ref;
    try {
      const layout = workspaceLayout(this.root, workItem);
      const prepared =
        this.options.strategy === "worktree" ? await this.prepareWorktree(workItem, layout, request) : await this.prepareClone(workItem, layout, request);
      this.options.events.emit("workspace.prepared", {
        work_item: ref,
        checkout: prepared.workspace.checkout,
        strategy: prepared.workspace.strategy,
        ...(prepared.workspace.branch === undefined ? {} : { branch: prepared.workspace.branch }),
        reused: prepared.reused,
      });
      return prepared.workspace;
    } catch (error) {
      const failure = error instanceof WorkspaceError ? error : new WorkspaceError(`cannot prepare a checkout for ${ref}: ${redactUrl(messageOf(error))}`, ref);
      this.options.events.emit("workspace.failed", { work_item: ref, error: failure.message });
      throw failure;
    }
  }

  async release(ref: string, workspace: SessionWorkspace): Promise<void> {
    const checkout = workspace.checkout;
    try {
      if (this.options.keepCheckoutOnClose) {
        this.options.events.emit("workspace.kept", { work_item: ref, checkout });
        return;
      }
      const parsed = parseWorkItemRef(ref);
      if (parsed.tracker !== "github") throw new Error(`${ref} is not a GitHub work item, so the-loop made no checkout for it`);
      const layout = workspaceLayout(this.root, { ref, host: parsed.host, repository: repositoryOf(parsed) });
      if (workspace.strategy === "worktree") await this.removeWorktree(layout, checkout);
      else await this.removeClone(layout, checkout);
      this.options.events.emit("workspace.cleaned", { work_item: ref, checkout });
    } catch (error) {
      this.options.events.emit("workspace.clean_failed", { work_item: ref, checkout, error: messageOf(error) });
    }
  }

  private async prepareWorktree(workItem: WorkItem, layout: ItemLayout, request: WorkspaceRequest): Promise<Prepared> {
    const ref = workItem.ref;
    const wanted = await this.wantedBranch(request);
    return this.withRepository(layout, async () => {
      const worktree = layout.worktree;
      const reused = await this.reusable(ref, worktree, wanted);
      if (reused) return { workspace: { checkout: worktree, strategy: "worktree", ...reused }, reused: true };

      const notes: Notes = [];
      const repository = this.lookup(workItem);
      await this.ensureSharedClone(ref, layout, repository, notes);
      const clone = layout.sharedClone;
      // A worktree folder deleted by hand stays registered until pruned, and `worktree add` refuses it.
      await this.quietly(["worktree", "prune"], clone);
      await rm(worktree, { recursive: true, force: true });
      await mkdir(dirname(worktree), { recursive: true });

      if (wanted !== undefined) {
        try {
          await this.git.run(["fetch", "origin", "--", `+refs/heads/${wanted}:refs/remotes/origin/${wanted}`], { cwd: clone });
          await this.git.run(["worktree", "add", "-B", wanted, "--", worktree, `origin/${wanted}`], { cwd: clone });
          return { workspace: { checkout: worktree, strategy: "worktree", branch: wanted }, reused: false };
        } catch (error) {
          notes.push(`the pull request branch ${wanted} could not be checked out (${messageOf(error)})`);
          await rm(worktree, { recursive: true, force: true });
          await this.quietly(["worktree", "prune"], clone);
        }
      }

      const base = await this.defaultBranch(repository, clone, notes);
      try {
        await this.git.run(["worktree", "add", "--detach", "--", worktree, `origin/${base}`], { cwd: clone });
      } catch (error) {
        await rm(worktree, { recursive: true, force: true });
        throw this.gitFailure(
          ref,
          `cannot add a worktree of ${layout.repository} at origin/${base} for ${ref}`,
          error,
          notes,
          `check that ${base} is the repository's default branch and that ${clone} is a healthy clone (delete it to start afresh)`,
        );
      }
      return { workspace: { checkout: worktree, strategy: "worktree" }, reused: false };
    });
  }

  private async prepareClone(workItem: WorkItem, layout: ItemLayout, request: WorkspaceRequest): Promise<Prepared> {
    const ref = workItem.ref;
    const wanted = await this.wantedBranch(request);
    return this.locked(`item:${layout.slug}`, layout.itemLockTarget, async () => {
      const checkout = layout.itemClone;
      const reused = await this.reusable(ref, checkout, wanted);
      if (reused) return { workspace: { checkout, strategy: "clone", ...reused }, reused: true };

      const info = await this.lookup(workItem)();
      await rm(checkout, { recursive: true, force: true });
      await this.cloneInto(ref, layout, info, layout.itemStaging, checkout, []);
      if (wanted !== undefined) {
        try {
          await this.git.run(["checkout", "-B", wanted, `origin/${wanted}`, "--"], { cwd: checkout });
          return { workspace: { checkout, strategy: "clone", branch: wanted }, reused: false };
        } catch {
          // Like a worktree, the clone stays on the default branch when the head cannot be had.
        }
      }
      return { workspace: { checkout, strategy: "clone" }, reused: false };
    });
  }

  /**
   * A checkout left by an earlier session of the item is used as it is — it may hold that
   * session's work. Returns what to record of it, or undefined when there is none to reuse.
   */
  private async reusable(ref: string, checkout: string, wanted: string | undefined): Promise<{ branch?: string } | undefined> {
    if (!(await exists(join(checkout, ".git")))) return undefined;
    let head: string;
    try {
      head = (await this.git.run(["rev-parse", "--abbrev-ref", "HEAD"], { cwd: checkout })).trim();
    } catch (error) {
      // Deleting it could destroy a session's uncommitted work: a person decides.
      throw this.gitFailure(
        ref,
        `the existing checkout ${checkout} of ${ref} is no longer a working git checkout`,
        error,
        [],
        `move away what you want to keep and delete ${checkout}; the next event prepares a fresh one`,
      );
    }
    return wanted !== undefined && head === wanted ? { branch: wanted } : {};
  }

  private async ensureSharedClone(ref: string, layout: RepositoryLayout, repository: () => Promise<RepositoryInfo>, notes: Notes): Promise<void> {
    const clone = layout.sharedClone;
    if (await exists(join(clone, ".git"))) {
      try {
        await this.git.run(["fetch", "--prune", "origin"], { cwd: clone });
      } catch (error) {
        // An unreachable remote need not stop a session: what was fetched before may be enough.
        notes.push(`fetching ${layout.repository} failed, so the clone may be out of date (${messageOf(error)})`);
      }
      return;
    }
    const info = await repository();
    // Whatever sits there without a .git is not a clone (an interrupted one, an empty folder).
    await rm(clone, { recursive: true, force: true });
    await this.cloneInto(ref, layout, info, layout.sharedStaging, clone, ["--no-checkout"]);
    try {
      // Detached, the shared clone holds no branch, so any branch can be checked out in a worktree.
      await this.git.run(["update-ref", "--no-deref", "HEAD", "HEAD"], { cwd: clone });
    } catch (error) {
      throw this.gitFailure(ref, `cannot set up the clone of ${layout.repository} at ${clone}`, error, notes, `delete ${clone} and try again`);
    }
  }

  /** Clones into a staging folder and moves it into place, so an interrupted clone never looks finished. */
  private async cloneInto(
    ref: string,
    layout: RepositoryLayout,
    info: RepositoryInfo,
    staging: string,
    target: string,
    extra: readonly string[],
  ): Promise<void> {
    const url = info.cloneUrl.trim();
    if (url === "" || url.startsWith("-")) {
      throw new WorkspaceError(`cannot clone ${layout.repository} for ${ref}: the tracker gave an unusable clone URL "${redactUrl(url)}"`, ref);
    }
    await rm(staging, { recursive: true, force: true });
    await mkdir(dirname(staging), { recursive: true });
    try {
      await this.git.run(["clone", ...extra, "--", url, staging], { cwd: dirname(staging) });
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      const timedOut = error instanceof GitError && error.timedOut;
      throw this.gitFailure(
        ref,
        `cannot clone ${layout.repository} from ${redactUrl(url)} for ${ref}`,
        error,
        [],
        timedOut
          ? "a large repository may need a longer routing.workspace.gitTimeoutSeconds; otherwise check the network"
          : `check the clone URL and, for a private repository, that git has credentials for ${layout.host} (a credential helper such as \`gh auth setup-git\`, or an SSH key)`,
      );
    }
    await rename(staging, target);
  }

  /** The pull request head to check out, if it is in the repository and safe to hand to git. */
  private async wantedBranch(request: WorkspaceRequest): Promise<string | undefined> {
    const branch = request.branch;
    if (branch === undefined || branch === "" || request.headInRepository === false) return undefined;
    return (await this.isBranchName(branch)) ? branch : undefined;
  }

  private async isBranchName(name: string): Promise<boolean> {
    if (unsafeBranch(name)) return false;
    await mkdir(this.root, { recursive: true, mode: 0o700 });
    try {
      // Inside a repository `--branch` expands shorthands like @{-1}; only the name itself passes.
      const normalized = await this.git.run(["check-ref-format", "--branch", name], { cwd: this.root });
      return normalized.trim() === name;
    } catch {
      return false;
    }
  }

  /** The tracker's default branch, else the one the remote names, else `main`. */
  private async defaultBranch(repository: () => Promise<RepositoryInfo>, clone: string, notes: Notes): Promise<string> {
    try {
      const branch = (await repository()).defaultBranch.trim();
      if (branch !== "" && (await this.isBranchName(branch))) return branch;
    } catch (error) {
      notes.push(`the repository could not be looked up (${messageOf(error)})`);
    }
    try {
      const head = (await this.git.run(["rev-parse", "--abbrev-ref", "origin/HEAD"], { cwd: clone })).trim();
      const branch = head.startsWith("origin/") ? head.slice("origin/".length) : "";
      if (branch !== "" && (await this.isBranchName(branch))) return branch;
    } catch {
      // No origin/HEAD recorded: the conventional name is the last guess.
    }
    return "main";
  }

  /** Looked up at most once per prepare, and only when a clone or a new checkout needs it. */
  private lookup(workItem: WorkItem): () => Promise<RepositoryInfo> {
    let pending: Promise<RepositoryInfo> | undefined;
    return () => {
      pending ??= this.options.repository(workItem).catch((error: unknown) => {
        throw new WorkspaceError(`cannot prepare a checkout for ${workItem.ref}: looking up its repository failed: ${messageOf(error)}`, workItem.ref);
      });
      return pending;
    };
  }

  private async removeWorktree(layout: ItemLayout, checkout: string): Promise<void> {
    const worktree = this.expected(checkout, layout.worktree);
    await this.withRepository(layout, async () => {
      const clone = layout.sharedClone;
      const hasClone = await exists(join(clone, ".git"));
      if (hasClone && (await exists(worktree))) await this.quietly(["worktree", "remove", "--force", "--", worktree], clone);
      await rm(worktree, { recursive: true, force: true });
      if (hasClone) await this.quietly(["worktree", "prune"], clone);
    });
  }

  private async removeClone(layout: ItemLayout, checkout: string): Promise<void> {
    this.expected(checkout, layout.itemClone);
    await this.locked(`item:${layout.slug}`, layout.itemLockTarget, () => rm(layout.itemDir, { recursive: true, force: true }));
  }

  /** Only the folder the-loop itself would have made for the item is ever deleted. */
  private expected(checkout: string, path: string): string {
    if (!isAbsolute(checkout) || resolve(checkout) !== path || !isInside(this.root, path)) {
      throw new Error(`refusing to delete ${checkout}: it is not the checkout the-loop makes under ${this.root} (${path})`);
    }
    return path;
  }

  private withRepository<T>(layout: RepositoryLayout, critical: () => Promise<T>): Promise<T> {
    return this.locked(`repository:${layout.key}`, layout.lockTarget, critical);
  }

  private locked<T>(key: string, target: string, critical: () => Promise<T>): Promise<T> {
    // Another process may be in the middle of a clone: wait as long as its git commands may run.
    const timeoutMs = this.options.gitTimeoutMs * 5 + 10_000;
    return this.mutex.run(key, () => withLock(target, critical, { timeoutMs }));
  }

  /** Housekeeping whose failure changes nothing the next command would not report itself. */
  private async quietly(args: readonly string[], cwd: string): Promise<void> {
    try {
      await this.git.run(args, { cwd });
    } catch {
      // Deliberately ignored.
    }
  }

  private gitFailure(ref: string, what: string, error: unknown, notes: Notes, check: string): WorkspaceError {
    const git = error instanceof GitError ? error : undefined;
    const parts = [`${what}: ${redactUrl(messageOf(error))}`, ...notes.map(redactUrl), check];
    return new WorkspaceError(parts.join("; "), ref, git);
  }
}
