import { consentedFile } from "./consented.js";
import { CapabilityError } from "./load.js";
import type { LoadedCapability } from "./load.js";
import { whenHolds } from "./manifest.js";
import type { CapabilityGate, LoopPoint } from "./manifest.js";

/**
 * Which capability hooks are active at a loop point, and the envelope `the-loop loop render-hooks`
 * prints for the session and the daemon's dispatch to act on (docs/capabilities.md). Pure, but for
 * `fragmentText`, which reads a contribution's file from its bundle.
 *
 * The order is part of the contract, so it never depends on the config's order: every step, then
 * every contribution, then every gate; within a kind the capabilities by id, and each
 * capability's entries as its manifest lists them.
 */

export type ActiveHook =
  | {
      readonly capId: string;
      /** The entry in its manifest: `steps[0]`. */
      readonly source: string;
      readonly kind: "step";
      readonly ref: { readonly skill?: string; readonly agent?: string; readonly command?: string };
      readonly onError: "skip" | "halt";
      readonly when?: string;
    }
  | {
      readonly capId: string;
      readonly source: string;
      readonly kind: "contribution";
      readonly into: string;
      readonly fragment: { readonly inline?: string; readonly file?: string };
      readonly when?: string;
    }
  | {
      readonly capId: string;
      readonly source: string;
      readonly kind: "gate";
      readonly check: CapabilityGate["check"];
      readonly blocking: boolean;
      readonly onError: "skip" | "halt";
      readonly message: string;
      readonly when?: string;
    };

export interface HookEnvelope {
  readonly point: LoopPoint;
  readonly activeHooks: readonly ActiveHook[];
  readonly rendered: string;
}

/** Only the keys that are set, so an envelope never carries `"skill": undefined` or an unset `when`. */
function present<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as T;
}

const byId = (a: LoadedCapability, b: LoadedCapability): number => (a.manifest.id < b.manifest.id ? -1 : a.manifest.id > b.manifest.id ? 1 : 0);

/** The hooks active at `point`, in the contract's order (see the module comment). */
export function activeHooks(capabilities: readonly LoadedCapability[], point: LoopPoint): ActiveHook[] {
  const sorted = [...capabilities].sort(byId);
  const holds = (capability: LoadedCapability, entry: { readonly point: LoopPoint; readonly when?: string }): boolean =>
    entry.point === point && whenHolds(entry.when, capability.values);
  const steps = sorted.flatMap((capability) =>
    capability.manifest.steps.flatMap((step, index): ActiveHook[] =>
      holds(capability, step)
        ? [
            present({
              capId: capability.manifest.id,
              source: `steps[${index}]`,
              kind: "step" as const,
              ref: present({ skill: step.ref.skill, agent: step.ref.agent, command: step.ref.command }),
              onError: step.onError,
              when: step.when,
            }),
          ]
        : [],
    ),
  );
  const contributions = sorted.flatMap((capability) =>
    capability.manifest.contributions.flatMap((contribution, index): ActiveHook[] =>
      holds(capability, contribution)
        ? [
            present({
              capId: capability.manifest.id,
              source: `contributions[${index}]`,
              kind: "contribution" as const,
              into: contribution.into,
              fragment: present({ inline: contribution.fragment.inline, file: contribution.fragment.file }),
              when: contribution.when,
            }),
          ]
        : [],
    ),
  );
  const gates = sorted.flatMap((capability) =>
    capability.manifest.gates.flatMap((gate, index): ActiveHook[] =>
      holds(capability, gate)
        ? [
            present({
              capId: capability.manifest.id,
              source: `gates[${index}]`,
              kind: "gate" as const,
              check: gate.check,
              blocking: gate.blocking,
              onError: gate.onError,
              message: gate.message,
              when: gate.when,
            }),
          ]
        : [],
    ),
  );
  return [...steps, ...contributions, ...gates];
}

const ON_ERROR: Record<"skip" | "halt", string> = {
  skip: "skip (a failure is a warning; the point goes on)",
  halt: "halt (a failure stops the point)",
};

function stepTarget(ref: { readonly skill?: string; readonly agent?: string; readonly command?: string }): string {
  if (ref.command !== undefined) return `run \`the-loop ${ref.command}\``;
  if (ref.agent !== undefined) return `run the agent \`${ref.agent}\``;
  return `use the skill \`${ref.skill ?? ""}\``;
}

function gateCheck(check: CapabilityGate["check"]): string {
  if (check.query !== undefined) return `run \`the-loop ${check.query}\`, which prints {block, message}`;
  if (check.predicate !== undefined) {
    const { kind, ...fields } = check.predicate;
    return `the predicate ${kind} ${JSON.stringify(fields)} (\`the-loop loop predicate\` evaluates it)`;
  }
  return `the agent \`${check.agentVerdict?.ref ?? ""}\` judges: ${JSON.stringify(check.agentVerdict?.prompt ?? "")}`;
}

const whenLine = (when: string | undefined): string[] => (when !== undefined ? [`- when: \`${when}\` is true`] : []);

/**
 * The hooks as people and agents read them: one block per hook in the envelope's order, numbered
 * within its kind, a contribution's inline text verbatim between tags naming where it comes from
 * and where it goes. Deterministic: the same hooks always render the same text.
 */
export function renderHooks(point: LoopPoint, hooks: readonly ActiveHook[]): string {
  if (hooks.length === 0) return `_No active hooks at ${point}._`;
  const count = { step: 0, contribution: 0, gate: 0 };
  const blocks = hooks.map((hook): string[] => {
    const n = ++count[hook.kind];
    const from = `${hook.capId}, ${hook.source}`;
    switch (hook.kind) {
      case "step":
        return [`### Step ${n}: ${stepTarget(hook.ref)} (${from})`, `- onError: ${ON_ERROR[hook.onError]}`, ...whenLine(hook.when)];
      case "contribution": {
        const head = `### Contribution ${n}: into ${hook.into} (${from})`;
        const body =
          hook.fragment.inline !== undefined
            ? [`<contribution from="${hook.capId}" into="${hook.into}">`, hook.fragment.inline.trimEnd(), "</contribution>"]
            : [`_The text is the bundle's file \`${hook.fragment.file ?? ""}\`, put in verbatim._`];
        return [head, ...whenLine(hook.when), "", ...body];
      }
      case "gate":
        return [
          `### Gate ${n}: ${hook.blocking ? "blocking" : "advisory"} (${from})`,
          `- check: ${gateCheck(hook.check)}`,
          `- on a block: ${hook.blocking ? "stop the step and show" : "show, and go on"}: ${JSON.stringify(hook.message)}`,
          `- onError: ${ON_ERROR[hook.onError]}`,
          ...whenLine(hook.when),
        ];
    }
  });
  const title = `## Active hooks at ${point}: ${count.step} step(s), ${count.contribution} contribution(s), ${count.gate} gate(s)`;
  return [title, ...blocks.map((block) => ["", ...block].join("\n"))].join("\n");
}

/** What `the-loop loop render-hooks POINT --raw` prints. */
export function hookEnvelope(capabilities: readonly LoadedCapability[], point: LoopPoint): HookEnvelope {
  const hooks = activeHooks(capabilities, point);
  return { point, activeHooks: hooks, rendered: renderHooks(point, hooks) };
}

/**
 * A contribution's text, verbatim: its inline text, or its file read from inside the bundle
 * (re-checked to be inside) when it is still the file consented to — a `ConsentChangedError`
 * otherwise, and the text is not used.
 */
export async function fragmentText(capability: LoadedCapability, fragment: { inline?: string; file?: string }): Promise<string> {
  if (fragment.inline !== undefined && fragment.file === undefined) return fragment.inline;
  if (fragment.file === undefined || fragment.inline !== undefined) {
    throw new CapabilityError([`${capability.file}: a fragment sets exactly one of inline, file`]);
  }
  return (await consentedFile(capability, fragment.file, "fragment.file")).toString("utf8");
}
