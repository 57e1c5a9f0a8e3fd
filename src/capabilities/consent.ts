import { createHash } from "node:crypto";
import { lstat, readFile, readdir, readlink } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { EXIT_USAGE, ExitError } from "../errors.js";
import type { CapabilityManifest } from "./manifest.js";

/**
 * What the operator consents to: the bundle's hash (every file, so no edit after consent goes
 * unnoticed) and the disclosure of everything in it that runs or reaches an assignment.
 */

/** A bundle is a manifest and a few files; one far larger is a mistake (a checkout, a build folder). */
export const MAX_BUNDLE_FILES = 1_000;
export const MAX_BUNDLE_BYTES = 16 * 1024 * 1024;

/**
 * The SHA-256 of the bundle at `dir`: each file's path relative to the bundle (sorted, `/`
 * separated) and its content; a symlink counts by its target, never followed. Nothing is
 * ignored — a dotfile or a lock file could be read by a command as well as any other.
 */
export async function bundleHash(dir: string): Promise<string> {
  const entries: { path: string; kind: "file" | "link"; absolute: string }[] = [];
  let bytes = 0;
  const walk = async (folder: string): Promise<void> => {
    for (const name of (await readdir(folder)).sort()) {
      const absolute = join(folder, name);
      const info = await lstat(absolute);
      const path = relative(dir, absolute).split(sep).join("/");
      if (info.isDirectory()) {
        await walk(absolute);
        continue;
      }
      if (!info.isFile() && !info.isSymbolicLink()) {
        throw new ExitError(`capability bundle ${dir}: ${path} is neither a file, a folder nor a symlink; a bundle holds files only`, EXIT_USAGE, "config");
      }
      bytes += info.size;
      entries.push({ path, kind: info.isFile() ? "file" : "link", absolute });
      if (entries.length > MAX_BUNDLE_FILES || bytes > MAX_BUNDLE_BYTES) {
        throw new ExitError(
          `capability bundle ${dir} holds more than ${MAX_BUNDLE_FILES} files or ${MAX_BUNDLE_BYTES / 1024 / 1024} MiB; a bundle is its manifest and the few files it runs — point at that folder, not a checkout`,
          EXIT_USAGE,
          "config",
        );
      }
    }
  };
  await walk(dir);
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const hash = createHash("sha256");
  for (const entry of entries) {
    const content = entry.kind === "file" ? await readFile(entry.absolute) : Buffer.from(await readlink(entry.absolute));
    // Length-prefixed, so no two bundles share a byte stream.
    hash.update(`${entry.kind}\0${Buffer.byteLength(entry.path)}\0${entry.path}\0${content.length}\0`);
    hash.update(content);
  }
  return hash.digest("hex");
}

const quoted = (argv: readonly string[]): string => JSON.stringify(argv);

/**
 * Every executable surface of a manifest, and every text that reaches an assignment, as lines a
 * person reads before consenting: declared commands and their argv, the steps (the commands they
 * run, the skills and agents they ask for), the gates' checks, the resolver's argv, the fragments'
 * sources. Values are JSON-quoted, so a hostile one cannot forge a line of its own.
 */
export function disclosureLines(manifest: CapabilityManifest): string[] {
  const lines: string[] = [`capability ${manifest.id} ${manifest.version}: ${JSON.stringify(manifest.description)}`];
  const section = (title: string, items: readonly string[]): void => {
    lines.push(`${title}:${items.length === 0 ? " none" : ""}`);
    for (const item of items) lines.push(`  - ${item}`);
  };
  if (manifest.requires.length > 0) lines.push(`requires: ${manifest.requires.join(", ")}`);
  section(
    "commands (run from inside the bundle, without a shell)",
    manifest.commands.map(
      (command) => `${JSON.stringify(command.name)} runs ${quoted(command.argv)}${command.timeoutMs !== undefined ? ` (for at most ${command.timeoutMs} ms)` : ""}`,
    ),
  );
  section(
    "steps",
    manifest.steps.map((step) => {
      const what =
        step.ref.command !== undefined
          ? `runs the command ${JSON.stringify(step.ref.command)}`
          : step.ref.agent !== undefined
            ? `asks the session to run the agent ${JSON.stringify(step.ref.agent)}`
            : `asks the session to use the skill ${JSON.stringify(step.ref.skill)}`;
      return `${step.point}: ${what} (onError ${step.onError}${step.when ? `, when ${step.when}` : ""})`;
    }),
  );
  section(
    "gates",
    manifest.gates.map((gate) => {
      const check = gate.check;
      const what =
        check.query !== undefined
          ? `runs the query command ${JSON.stringify(check.query)}`
          : check.predicate !== undefined
            ? `evaluates the predicate ${JSON.stringify(check.predicate)}${check.predicate.kind === "command-exit-zero" ? " (runs that argv)" : ""}`
            : `asks the agent ${JSON.stringify(check.agentVerdict?.ref)} for a verdict on ${JSON.stringify(check.agentVerdict?.prompt)}`;
      return `${gate.point}: ${what}; ${gate.blocking ? "blocking" : "advisory"}, onError ${gate.onError}${gate.when ? `, when ${gate.when}` : ""}`;
    }),
  );
  const resolver = manifest.taskContentResolver;
  section(
    "task-content resolver",
    resolver ? [`task ids ${resolver.trackerPrefix}-… run ${quoted([resolver.invoke.binary, ...resolver.invoke.args])} (at most ${resolver.invoke.timeoutMs} ms)`] : [],
  );
  section(
    "contributions (text put verbatim into an assignment)",
    manifest.contributions.map(
      (contribution) =>
        `${contribution.point} into ${contribution.into}: ${contribution.fragment.file !== undefined ? `the file ${JSON.stringify(contribution.fragment.file)}` : `inline text (${contribution.fragment.inline?.length ?? 0} characters)`}`,
    ),
  );
  return lines;
}
