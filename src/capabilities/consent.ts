import { EXIT_USAGE, ExitError } from "../errors.js";
import { readBundleFiles } from "./bundle-files.js";
import { skillId } from "./dispatch.js";
import { GSD_VERSION, commandReferences, isCommandWords, predicateSchema } from "./manifest.js";
import type { CapabilityManifest } from "./manifest.js";
import { runtimeWarning } from "./runtime-compat.js";

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
const q = (value: unknown): string => JSON.stringify(value);

/** The built-in harnesses: what a `runtimeCompat` is read against when no config says which harnesses run. */
export const HARNESSES = ["claude", "codex", "cursor", "gemini"] as const;

export interface DisclosureOptions {
  /** The harnesses the config runs sessions in (runtime-compat.ts `configuredHarnesses`); default: the built-in ones. */
  readonly harnesses?: readonly string[];
  /** The commands installed capabilities (this one included) declare: a `ref.command` or `check.query` naming another is warned about. */
  readonly declaredCommands?: ReadonlySet<string>;
}

/** What a hook whose command cannot run leads to at dispatch, in words: the contract's routing. */
function consequence(manifest: CapabilityManifest, kind: "step" | "gate", index: number, why: string): string {
  if (kind === "step") {
    const step = manifest.steps[index];
    return `${why}; at ${step?.point ?? "its point"} the step is never run — it is skipped with a warning (capability.step_failed), whatever its onError`;
  }
  const gate = manifest.gates[index];
  if (gate === undefined) return why;
  const active =
    gate.when === undefined
      ? "every time the point passes"
      : `while ${gate.when} is true (its default: ${q(manifest.config[gate.when]?.default)}; set it to false in the capability's entry of the config to turn the gate off)`;
  return gate.onError === "halt"
    ? `${why}; its check is never run and counts as failed, and its onError is halt: it HALTS ${gate.point} ${active}`
    : `${why}; its check is never run and counts as failed, and its onError is skip: it is skipped with a warning at ${gate.point} ${active}`;
}

/** The consent's warnings: what in the manifest the-loop will not run, or not as gsd-core would, and what follows. */
export function consentWarnings(manifest: CapabilityManifest, options: DisclosureOptions = {}): string[] {
  const warnings: string[] = [];
  for (const reference of commandReferences(manifest)) {
    if (!isCommandWords(reference.command)) {
      warnings.push(
        consequence(
          manifest,
          reference.kind,
          reference.index,
          `${reference.field} ${q(reference.command)} is not a command's words (lowercase words, one space between: gsd-core's dotted queries are not)`,
        ),
      );
    } else if (options.declaredCommands !== undefined && !options.declaredCommands.has(reference.command)) {
      warnings.push(
        consequence(
          manifest,
          reference.kind,
          reference.index,
          `${reference.field} ${q(reference.command)} names no command an installed capability declares as {name, argv}`,
        ).replace("is never run", "finds no command to run"),
      );
    }
  }
  manifest.gates.forEach((gate, index) => {
    if (gate.check.predicate === undefined) return;
    const known = predicateSchema.safeParse(gate.check.predicate);
    if (!known.success) {
      warnings.push(
        consequence(
          manifest,
          "gate",
          index,
          `gates[${index}].check.predicate ${q(gate.check.predicate)} is not one the-loop's evaluator knows (${known.error.issues[0]?.message ?? "unknown shape"})`,
        ).replace("is never run", "cannot be evaluated"),
      );
    }
  });
  manifest.commandModules.forEach((module, index) =>
    warnings.push(
      `commands[${index}] is gsd-core's command module ${q(module.module)} (family ${q(module.family)}): the-loop never loads it, so \`the-loop ${module.family} …\` runs nothing of it`,
    ),
  );
  manifest.hooks.forEach((hook, index) =>
    warnings.push(
      `hooks[${index}] (${q(hook.event)} runs ${q(hook.script)}) is a host-runtime hook gsd-core writes into a host's settings: the-loop never installs or runs it`,
    ),
  );
  if (manifest.mcpServers !== undefined) warnings.push("mcpServers: the-loop never starts a capability's MCP servers");
  if (manifest.reviewer !== undefined) warnings.push("reviewer: the-loop has no reviewer lanes; it never invokes this one");
  if (manifest.runtime !== undefined) warnings.push("runtime: the-loop projects nothing onto host runtimes; the runtime descriptor is not used");
  const runtimes = runtimeWarning(manifest, options.harnesses ?? HARNESSES);
  if (runtimes !== undefined) warnings.push(runtimes);
  manifest.steps.forEach((step, index) => {
    if (step.ref.skill !== undefined)
      warnings.push(
        `steps[${index}] asks the session to use the skill ${q(skillId(step.ref.skill))} (the contract's id for ${q(step.ref.skill)}); the bundle ships no skill file, so a session without it is told to say so and go on`,
      );
  });
  for (const [list, entries] of [
    ["steps", manifest.steps],
    ["contributions", manifest.contributions],
  ] as const) {
    entries.forEach((entry, index) => {
      if (entry.fragment?.legacyFile === true)
        warnings.push(`${list}[${index}].fragment.file is the-loop's earlier name: write fragment.path, as gsd-core does`);
    });
  }
  if (manifest.format === "the-loop") {
    warnings.push(
      "the manifest is in the-loop's earlier format (no role): it loads; to write gsd-core's format add role, title, tier, requires, runtimeCompat, skills, agents, config entries as {type, default, description}, and produces, consumes and onError on each step (docs/capabilities.md)",
    );
  }
  const unused = (["tier", "engines", "compatVersions", "integrity", "provenance"] as const).filter((key) => manifest[key] !== undefined);
  if (unused.length > 0) warnings.push(`accepted and not used by the-loop: ${unused.join(", ")} (engines.gsd was checked against gsd-core ${GSD_VERSION})`);
  return warnings;
}

/**
 * Every executable surface of a manifest, and every text that reaches an assignment, as lines a
 * person reads before consenting. The executable surfaces are gsd-core's — host-runtime hooks,
 * command modules, MCP servers, reviewer lanes — with the-loop's commands, the resolver (its binary
 * and args) and every gate's check, which the contract says gsd-core's consent forgets; a bundle
 * with none of them is declarative-only. Then the steps and contributions, then the warnings.
 * Values are JSON-quoted, so a hostile one cannot forge a line of its own.
 */
export function disclosureLines(manifest: CapabilityManifest, options: DisclosureOptions = {}): string[] {
  const format = manifest.format === "gsd-core" ? `gsd-core format, role ${manifest.role}` : "the-loop's earlier format";
  const lines: string[] = [`capability ${manifest.id} ${manifest.version} (${format}): ${q(manifest.description)}`];
  const section = (title: string, items: readonly string[]): void => {
    lines.push(`${title}:${items.length === 0 ? " none" : ""}`);
    for (const item of items) lines.push(`  - ${item}`);
  };
  if (manifest.requires.length > 0) lines.push(`requires: ${manifest.requires.join(", ")}`);
  const resolver = manifest.taskContentResolver;
  const reviewerInvoke = (manifest.reviewer?.["invoke"] ?? {}) as { binary?: unknown; args?: unknown };
  const surfaces = [
    ...manifest.hooks.map(
      (hook, index) =>
        `hooks[${index}]: the host-runtime hook ${q(hook.event)} runs the script ${q(hook.script)}${hook.matcher !== undefined ? ` (matcher ${q(hook.matcher)})` : ""} — not run by the-loop`,
    ),
    ...manifest.commandModules.map(
      (module, index) =>
        `commands[${index}]: gsd-core's command module ${q(module.module)} (family ${q(module.family)}, router ${q(module.router)}) — not loaded by the-loop`,
    ),
    ...manifest.commands.map(
      (command) =>
        `the command ${q(command.name)} runs ${quoted(command.argv)} from inside the bundle, without a shell${command.timeoutMs !== undefined ? `, for at most ${command.timeoutMs} ms` : ""}`,
    ),
    ...(manifest.mcpServers !== undefined ? [`mcpServers: ${q(manifest.mcpServers)} — not started by the-loop`] : []),
    ...(manifest.reviewer !== undefined
      ? [
          `reviewer lane ${q(manifest.reviewer["slug"])}: runs ${q([reviewerInvoke.binary, ...(Array.isArray(reviewerInvoke.args) ? reviewerInvoke.args : [])])} — not invoked by the-loop`,
        ]
      : []),
    ...(resolver
      ? [
          `taskContentResolver: tracker ids ${resolver.trackerPrefix}:… (and checklist ids ${resolver.trackerPrefix}-…) run ${quoted([resolver.invoke.binary, ...resolver.invoke.args])}, for at most ${resolver.invoke.timeoutMs} ms`,
        ]
      : []),
    ...manifest.gates.map((gate, index) => {
      const check = gate.check;
      const what =
        check.query !== undefined
          ? `runs the query command ${q(check.query)}`
          : check.predicate !== undefined
            ? `evaluates the predicate ${q(check.predicate)}${check.predicate["kind"] === "command-exit-zero" ? " (runs a command)" : ""}`
            : `asks the agent ${q(check.agentVerdict?.ref)} for a verdict on ${q(check.agentVerdict?.prompt)}`;
      return `gates[${index}] at ${gate.point}: ${what}; ${gate.blocking ? "blocking" : "advisory"}, onError ${gate.onError}${gate.when ? `, when ${gate.when}` : ""}`;
    }),
  ];
  if (surfaces.length === 0 && !manifest.steps.some((step) => step.ref.command !== undefined)) {
    lines.push("executable surfaces: none — declarative-only (no hooks, command modules, commands, MCP servers, reviewer lanes, resolver or gate checks)");
  } else {
    section("executable surfaces", surfaces);
  }
  section(
    "steps",
    manifest.steps.map((step, index) => {
      const what =
        step.ref.command !== undefined
          ? `runs the command ${q(step.ref.command)}`
          : step.ref.agent !== undefined
            ? `asks the session to run the agent ${q(step.ref.agent)}`
            : `asks the session to use the skill ${q(skillId(step.ref.skill ?? ""))}`;
      return `steps[${index}] at ${step.point}: ${what} (onError ${step.onError}${step.when ? `, when ${step.when}` : ""})`;
    }),
  );
  section(
    "contributions (text put verbatim into an assignment)",
    manifest.contributions.map(
      (contribution, index) =>
        `contributions[${index}] at ${contribution.point} into ${contribution.into}: ${contribution.fragment.inline === undefined && contribution.fragment.path !== undefined ? `the file ${q(contribution.fragment.path)}` : `inline text (${contribution.fragment.inline?.length ?? 0} characters)`}`,
    ),
  );
  const warnings = consentWarnings(manifest, options);
  if (warnings.length > 0) section("warnings", warnings);
  return lines;
}
