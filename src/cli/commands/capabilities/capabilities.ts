import { readFile } from "node:fs/promises";
import { dirname, isAbsolute, relative, resolve } from "node:path";
import { isMap, isSeq, parseDocument } from "yaml";
import { z } from "zod";
import { disclosureLines } from "../../../capabilities/consent.js";
import { configuredHarnesses, installRefusal } from "../../../capabilities/runtime-compat.js";
import { CapabilityError, configValues, crossCheck, readBundle, resolveCapabilityPath } from "../../../capabilities/load.js";
import type { CapabilityBundle } from "../../../capabilities/load.js";
import { capabilityEntrySchema } from "../../../config/capability-schema.js";
import type { CapabilityEntryConfig } from "../../../config/capability-schema.js";
import { CONFIG_DIR_NAME, CONFIG_FILE_NAME } from "../../../config/load.js";
import { EXIT_FAILURE, EXIT_USAGE, ExitError, NotFoundError } from "../../../errors.js";
import { writeFileAtomic } from "../../../state/atomic.js";
import { displayPath, openProject } from "../../context.js";
import type { GlobalOptions, Project } from "../../context.js";
import { formatTable, stderr, stdout } from "../../output.js";

export interface CapabilitiesAddOptions {
  readonly yes: boolean;
  readonly json: boolean;
}

export interface CapabilitiesListOptions {
  readonly json: boolean;
}

export interface CapabilitiesRemoveOptions {
  readonly json: boolean;
}

/** The config file a command edits: there must be one (defaults live nowhere to edit). */
function configFileOf(project: Project): string {
  const file = project.loaded.source.path;
  if (!file) {
    throw new ExitError(
      `no config file to declare the capability in; run \`the-loop init\` first (it writes ${CONFIG_DIR_NAME}/${CONFIG_FILE_NAME})`,
      EXIT_USAGE,
      "config",
    );
  }
  return file;
}

/** The entry's path as the config writes it: relative to the config's folder when inside it, else absolute. */
function configuredPathFor(dir: string, configDir: string): string {
  const rel = relative(configDir, dir);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : dir;
}

/** Installed bundles other than the one at `except`, read as they are on disk (a broken one is left out). */
async function otherInstalled(project: Project, configDir: string, except: string): Promise<CapabilityBundle[]> {
  const bundles: CapabilityBundle[] = [];
  for (const entry of project.config.capabilities) {
    const dir = resolveCapabilityPath(entry.path, configDir);
    if (dir === except) continue;
    // Only for the cross-check of ids and commands: a bundle that does not read is refused at load on its own.
    const outcome = await readBundle(dir).catch(() => undefined);
    if (outcome?.bundle) bundles.push(outcome.bundle);
  }
  return bundles;
}

/** The file's `capabilities` entries, parsed: an edit never starts from entries it cannot read. */
function entriesIn(file: string, value: unknown): CapabilityEntryConfig[] {
  const parsed = z.array(capabilityEntrySchema).safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const at = issue !== undefined && issue.path.length > 0 ? ` at capabilities.${issue.path.map(String).join(".")}` : "";
  throw new ExitError(
    `${displayPath(file)}: capabilities is not a list of capability entries (${issue?.message ?? "unexpected content"}${at}); fix it (\`the-loop config validate\`) and run this again`,
    EXIT_USAGE,
    "config",
  );
}

/**
 * Edits the config's `capabilities` list through the YAML document, so the rest of the file —
 * its comments and its order — stays as written. `edit` gets the list's plain entries and
 * returns the new ones.
 */
async function editCapabilities(file: string, edit: (entries: CapabilityEntryConfig[]) => CapabilityEntryConfig[]): Promise<void> {
  const text = await readFile(file, "utf8");
  const doc = parseDocument(text);
  if (doc.errors.length > 0 || (doc.contents !== null && !isMap(doc.contents))) {
    throw new ExitError(
      `${displayPath(file)} is not a YAML mapping the-loop can edit; fix it (\`the-loop config validate\`) and run this again`,
      EXIT_USAGE,
      "config",
    );
  }
  const current = doc.get("capabilities", true);
  const before = isSeq(current) ? entriesIn(file, current.toJSON()) : [];
  const after = edit(before);
  if (isSeq(current)) {
    // Keep each surviving entry's node (and its comments); change only what changed.
    for (let index = current.items.length - 1; index >= 0; index--) {
      const was = before[index];
      if (!after.some((entry) => entry.path === was?.path)) current.items.splice(index, 1);
    }
    for (const entry of after) {
      const at = current.items.findIndex((item) => isMap(item) && item.get("path") === entry.path);
      if (at === -1) current.items.push(doc.createNode(entry));
      else doc.setIn(["capabilities", at, "sha256"], entry.sha256);
    }
  } else {
    doc.set("capabilities", doc.createNode(after));
  }
  await writeFileAtomic(file, doc.toString());
}

/**
 * `the-loop capabilities add DIR [--yes]`: reads and checks the bundle, prints every executable
 * surface it has, and only with `--yes` declares it in the config at its current hash (again,
 * for one declared already: that is how a changed bundle is consented to).
 */
export async function runCapabilitiesAdd(globals: GlobalOptions, dirArgument: string, options: CapabilitiesAddOptions): Promise<void> {
  const project = await openProject(globals);
  const file = configFileOf(project);
  const configDir = dirname(file);
  const dir = resolve(dirArgument);
  const outcome = await readBundle(dir);
  if (!outcome.bundle) throw new CapabilityError(outcome.problems);
  const bundle = outcome.bundle;
  const others = await otherInstalled(project, configDir, dir);
  const problems = crossCheck([...others, bundle]).filter((problem) => problem.startsWith(`${bundle.file}:`));
  if (problems.length > 0) throw new CapabilityError(problems);
  const { manifest } = bundle;
  const harnesses = configuredHarnesses(project.config.routing);
  const runtimes = installRefusal(manifest, harnesses);
  if (runtimes !== undefined) throw new CapabilityError([`${bundle.file}: ${runtimes}`]);
  const declaredCommands = new Set([...others, bundle].flatMap((each) => each.manifest.commands.map((command) => command.name)));
  const disclosure = disclosureLines(manifest, { declaredCommands, harnesses });
  const facts = { id: manifest.id, version: manifest.version, path: dir, sha256: bundle.sha256 };
  if (!options.yes) {
    project.events.emit("capability.consent_required", { id: facts.id, version: facts.version, path: dir, bundle_hash: bundle.sha256 });
    if (!options.json) {
      for (const line of disclosure) stdout.line(line);
      stdout.line("");
      stdout.line(`sha256 ${bundle.sha256}`);
    }
    throw new ExitError(
      `nothing was changed: read what ${manifest.id} runs${options.json ? " (details)" : " (above)"}, then consent with \`the-loop capabilities add ${JSON.stringify(dirArgument)} --yes\``,
      EXIT_FAILURE,
      "failure",
      options.json ? disclosure : [],
    );
  }
  const configuredPath = configuredPathFor(dir, configDir);
  let reconsented = false;
  let kept: CapabilityEntryConfig["config"];
  await editCapabilities(file, (entries) => {
    const at = entries.findIndex((entry) => resolveCapabilityPath(entry.path, configDir) === dir);
    reconsented = at !== -1;
    kept = entries[at]?.config;
    if (at === -1) return [...entries, { path: configuredPath, sha256: bundle.sha256 }];
    // Consent covers the bundle; the operator's config values for it stay as they were.
    return entries.map((entry, index) => (index === at ? { ...entry, sha256: bundle.sha256 } : entry));
  });
  // A changed bundle may have dropped a key the operator set: the next load would refuse it.
  for (const problem of configValues(manifest, kept).problems) stderr.warn(`${displayPath(file)}: the entry of ${manifest.id}: ${problem}`);
  project.events.emit("capability.installed", { id: facts.id, version: facts.version, path: dir, bundle_hash: bundle.sha256, config: file, reconsented });
  if (options.json) {
    stdout.json({ installed: true, reconsented, ...facts, config: file, disclosure });
    return;
  }
  for (const line of disclosure) stdout.line(line);
  stdout.line("");
  stdout.line(`${reconsented ? "consented again to" : "installed"} ${manifest.id} ${manifest.version} in ${displayPath(file)} (sha256 ${bundle.sha256})`);
  stdout.line("a running daemon loads it when it starts next: `the-loop stop && the-loop start`");
}

interface Listing {
  readonly id: string | null;
  readonly version: string | null;
  readonly path: string;
  readonly resolvedPath: string;
  readonly sha256: string;
  readonly matches: boolean;
  readonly problem?: string;
}

async function listingsOf(project: Project): Promise<Listing[]> {
  const configDir = project.loaded.source.path ? dirname(project.loaded.source.path) : project.loaded.baseDir;
  const listings: Listing[] = [];
  for (const entry of project.config.capabilities) {
    const dir = resolveCapabilityPath(entry.path, configDir);
    const outcome = await readBundle(dir).catch((error: unknown) => ({ bundle: undefined, problems: [(error as Error).message] }));
    const bundle = outcome.bundle;
    listings.push({
      id: bundle?.manifest.id ?? null,
      version: bundle?.manifest.version ?? null,
      path: entry.path,
      resolvedPath: dir,
      sha256: entry.sha256,
      matches: bundle?.sha256 === entry.sha256,
      ...(bundle ? {} : { problem: outcome.problems.join("; ") }),
    });
  }
  return listings;
}

/** `the-loop capabilities list`: each installed capability and whether its bundle still matches the consent. */
export async function runCapabilitiesList(globals: GlobalOptions, options: CapabilitiesListOptions): Promise<void> {
  const project = await openProject(globals);
  const listings = await listingsOf(project);
  if (options.json) {
    stdout.json({ capabilities: listings });
    return;
  }
  if (listings.length === 0) {
    stdout.line("no capabilities installed; `the-loop capabilities add DIR` shows what a bundle runs before installing it");
    return;
  }
  const rows = listings.map((listing) => [
    listing.id ?? "?",
    listing.version ?? "?",
    listing.matches ? "yes" : listing.problem ? "unreadable" : "no: consent again",
    listing.sha256.slice(0, 12),
    listing.path,
  ]);
  stdout.line(formatTable(["id", "version", "matches", "consented", "path"], rows));
  for (const listing of listings.filter((each) => !each.matches)) {
    stdout.line("");
    stdout.line(
      listing.problem
        ? `${listing.path}: ${listing.problem}`
        : `${listing.id}: its bundle changed since consent; a daemon refuses to start until \`the-loop capabilities add ${JSON.stringify(listing.resolvedPath)} --yes\``,
    );
  }
}

/** `the-loop capabilities remove ID`: takes the capability's entry out of the config (its files stay). */
export async function runCapabilitiesRemove(globals: GlobalOptions, id: string, options: CapabilitiesRemoveOptions): Promise<void> {
  const project = await openProject(globals);
  const file = configFileOf(project);
  const listings = await listingsOf(project);
  // By id; an unreadable bundle has none, so its configured path names it too.
  const target = listings.find((listing) => listing.id === id) ?? listings.find((listing) => listing.path === id || listing.resolvedPath === resolve(id));
  if (target === undefined) {
    const known = listings.map((listing) => listing.id ?? listing.path);
    throw new NotFoundError(`no capability "${id}" is installed${known.length > 0 ? `; installed: ${known.join(", ")}` : ""} (\`the-loop capabilities list\`)`);
  }
  await editCapabilities(file, (entries) => entries.filter((entry) => entry.path !== target.path));
  project.events.emit("capability.removed", { id: target.id ?? id, path: target.resolvedPath, config: file });
  if (options.json) {
    stdout.json({ removed: true, id: target.id ?? id, path: target.path, config: file });
    return;
  }
  stdout.line(`removed ${target.id ?? id} from ${displayPath(file)} (its bundle at ${displayPath(target.resolvedPath)} is untouched)`);
}
