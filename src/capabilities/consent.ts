import { EXIT_USAGE, ExitError } from "../errors.js";
import { readBundleFiles } from "./bundle-files.js";
import type { CapabilityManifest } from "./manifest.js";

/**
 * What the operator consents to: the bundle's hash (every file, so no edit after consent goes
 * unnoticed) and the disclosure of everything in it that runs or reaches an assignment.
 */

/**
 * The SHA-256 of the bundle at `dir`: each file's path relative to the bundle (sorted, `/`
 * separated) and its content; a symlink counts by what it leads to, and one leading out of the
 * bundle is refused (bundle-files.ts). Nothing is ignored — a dotfile or a lock file could be
 * read by a command as well as any other.
 */
export async function bundleHash(dir: string): Promise<string> {
  const snapshot = await readBundleFiles(dir);
  if (snapshot.problems.length > 0) throw new ExitError(snapshot.problems.join("; "), EXIT_USAGE, "config");
  return snapshot.sha256;
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
