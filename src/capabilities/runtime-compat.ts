import { allowedHarnesses } from "../routing/harness-choice.js";
import type { HarnessRouting } from "../routing/harness-choice.js";
import type { CapabilityManifest } from "./manifest.js";

/**
 * gsd-core's `runtimeCompat` against the-loop's harnesses (docs/capabilities.md, "Runtimes"). A
 * harness's name is the runtime id it is read as: the built-in `claude`, `codex`, `cursor` and
 * `gemini` are gsd-core's runtimes of those names, and a command harness is the runtime its name
 * says (an `opencode` command harness is `opencode`). gsd-core leaves a capability off on a runtime
 * it does not support (not "surfaced" there). the-loop consented to the capability for every item,
 * so it does not drop it quietly:
 *
 * - `capabilities add` refuses a capability that supports none of the harnesses the config runs;
 * - consent warns about each configured harness it does not support;
 * - after a harness change, `config validate` and the daemon's start check again (load.ts, with
 *   the config's harnesses): one that supports none of them now refuses the load, one that excludes
 *   some of them is warned about; a config reload of the running daemon checks again too, and one
 *   that supports none is an event and a `status` problem (the daemon keeps what it loaded);
 * - at a loop point, a capability that does not support the item's session's harness is not run
 *   there, and the item is blocked at its node, naming the harness and the fix, so no gate of it is
 *   passed by without its check.
 *
 * Pure functions, no I/O.
 */

type Compat = NonNullable<CapabilityManifest["runtimeCompat"]>;

/** Whether a capability with `compat` runs on `runtime`: `unsupported` wins; `supported` holds it or `*`. No `runtimeCompat`: every runtime. */
export function supportsRuntime(compat: Compat | undefined, runtime: string): boolean {
  if (compat === undefined) return true;
  if (compat.unsupported.includes(runtime)) return false;
  return compat.supported.includes("*") || compat.supported.includes(runtime);
}

/**
 * The harnesses a config runs sessions in: those a start or a label may choose (its default, each
 * one it declares, each one a label maps to), the one list the dispatcher chooses from.
 */
export function configuredHarnesses(routing: HarnessRouting): string[] {
  return allowedHarnesses(routing);
}

const listed = (names: readonly string[]): string => names.join(", ");

/** What a capability supports, in words: `claude, codex`, or `every runtime but cursor`. */
function supportedWords(compat: Compat): string {
  const but = compat.unsupported.length > 0 ? ` but ${listed(compat.unsupported)}` : "";
  return compat.supported.includes("*") ? `every runtime${but}` : `${listed(compat.supported)}${but !== "" ? ` (not ${listed(compat.unsupported)})` : ""}`;
}

/**
 * Why `capabilities add` refuses the manifest: it supports none of `harnesses`. Undefined when it
 * supports one of them (or says nothing of runtimes).
 */
export function installRefusal(manifest: CapabilityManifest, harnesses: readonly string[], otherwise = "do not install it"): string | undefined {
  const compat = manifest.runtimeCompat;
  if (compat === undefined || harnesses.some((harness) => supportsRuntime(compat, harness))) return undefined;
  return (
    `runtimeCompat: capability ${manifest.id} supports ${supportedWords(compat)}, and the config runs sessions only in ${listed(harnesses)}; ` +
    `its hooks would block every item they reach. Declare a harness it supports under routing.harnesses (and choose it: routing.defaultHarness, routing.harnessByLabel, or \`sessions start --agent\`), or ${otherwise}`
  );
}

/**
 * An installed capability read again against the config's harnesses (`config validate`, the
 * daemon's start), which may have changed since its consent: the refusal when it supports none of
 * them, else the warning when it excludes some, each with the fix.
 */
export function loadedRuntimeCheck(
  manifest: CapabilityManifest,
  harnesses: readonly string[],
  otherwise = "remove its entry from `capabilities:`",
): { readonly refusal?: string; readonly warning?: string } {
  const refusal = installRefusal(manifest, harnesses, otherwise);
  if (refusal !== undefined) return { refusal };
  const warning = runtimeWarning(manifest, harnesses);
  if (warning === undefined) return {};
  return {
    warning:
      `capability ${manifest.id}: ${warning}; start such an item in a harness it supports (\`sessions start --work-item REF --agent NAME\`, ` +
      "routing.harnessByLabel), or remove the capability",
  };
}

/** The consent's warning: the configured harnesses the manifest does not support, and what follows there. */
export function runtimeWarning(manifest: CapabilityManifest, harnesses: readonly string[]): string | undefined {
  const compat = manifest.runtimeCompat;
  const excluded = harnesses.filter((harness) => !supportsRuntime(compat, harness));
  if (compat === undefined || excluded.length === 0) return undefined;
  const plural = excluded.length > 1;
  return (
    `runtimeCompat: it supports ${supportedWords(compat)}, not the harness${plural ? "es" : ""} ${listed(excluded)}: ` +
    `an item whose session runs in ${plural ? "one of them" : "it"} is blocked at the first node whose points it has hooks at (reason code capability-runtime)`
  );
}

/** Why a capability may not run in a session of `harness`, naming it and the fix; undefined when it may. */
export function runtimeHalt(manifest: CapabilityManifest, harness: string): string | undefined {
  const compat = manifest.runtimeCompat;
  if (supportsRuntime(compat, harness) || compat === undefined) return undefined;
  return (
    `capability ${manifest.id} does not run in the harness ${harness} (its runtimeCompat supports ${supportedWords(compat)}); ` +
    `close the item's session and start it in one it supports (\`sessions start --work-item REF --agent NAME\`; routing.harnessByLabel, routing.defaultHarness), or remove the capability`
  );
}
