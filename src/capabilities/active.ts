import { consentedFile } from "./consented.js";
import { CapabilityError } from "./load.js";
import type { LoadedCapability } from "./load.js";
import { whenHolds } from "./manifest.js";
import type { CapabilityGate, LoopPoint } from "./manifest.js";

/**
 * Which capability hooks are active at a loop point, and the envelope `the-loop loop render-hooks`
 * prints for the session and the daemon's dispatch to act on (docs/capabilities.md). It is
 * gsd-core's envelope: the same hooks, in the same order, with the same fields, and `rendered`
 * byte-equal to what gsd-core's own `loop render-hooks` prints for the same bundles and config
 * (test/capabilities/gsd-core-envelope.test.ts holds the two together). Pure: a fragment file's
 * text was read at the load, from the bytes consented to.
 *
 * The order is gsd-core's materialized order, which never depends on the config's order: every
 * step, then every contribution, then every gate. Steps and contributions are each ordered by
 * their produces → consumes edges, over every installed capability's entries at the point (active
 * or not, as gsd-core orders its registry before it filters), ready entries taken by capability
 * id; gates by capability id. Within one capability, the manifest's order.
 */

type Fragment = { readonly inline?: string; readonly path?: string };

export type ActiveHook =
  | {
      readonly capId: string;
      readonly kind: "step";
      readonly ref: { readonly skill?: string; readonly agent?: string; readonly command?: string };
      readonly fragment?: Fragment;
      readonly when?: string;
      readonly produces?: readonly string[];
      readonly consumes?: readonly string[];
      readonly onError: "skip" | "halt";
      /** The-loop's addition: the entry in its manifest, `steps[0]`. */
      readonly source: string;
    }
  | {
      readonly capId: string;
      readonly kind: "contribution";
      readonly into: string;
      readonly fragment: Fragment;
      readonly when?: string;
      readonly produces?: readonly string[];
      readonly consumes?: readonly string[];
      readonly onError?: "skip" | "halt";
      readonly configValues?: Readonly<Record<string, unknown>>;
      readonly source: string;
    }
  | {
      readonly capId: string;
      readonly kind: "gate";
      readonly when?: string;
      readonly check: CapabilityGate["check"];
      readonly blocking: boolean;
      readonly onError: "skip" | "halt";
      /** The-loop's addition: what a block says besides the check's own message (the-loop's earlier format). */
      readonly message?: string;
      readonly source: string;
    };

export interface HookEnvelope {
  readonly point: LoopPoint;
  readonly activeHooks: readonly ActiveHook[];
  readonly rendered: string;
  readonly warnings?: readonly string[];
}

/** Only the keys that are set, and no empty array, as gsd-core projects a hook. */
function present<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined && !(Array.isArray(entry) && entry.length === 0))) as T;
}

/** gsd-core's tie-break: capability ids compared as `localeCompare` does (fixed to "en", so a host's locale cannot reorder). */
const byCapId = (a: { readonly capId: string }, b: { readonly capId: string }): number => a.capId.localeCompare(b.capId, "en");

interface Entry<T> {
  readonly capId: string;
  readonly capability: LoadedCapability;
  readonly index: number;
  readonly hook: T;
}

/**
 * gsd-core's order of one kind's entries at a point: Kahn's algorithm over produces → consumes
 * edges, the first ready entries sorted by capability id, each entry's newly ready successors
 * sorted by id and queued after those already waiting (a queue, not a priority queue: gsd-core's
 * order exactly). A cycle keeps the remaining entries in id order rather than losing them.
 */
export function materializedOrder<T extends { readonly produces: readonly string[]; readonly consumes: readonly string[] }>(
  entries: readonly Entry<T>[],
): Entry<T>[] {
  if (entries.length <= 1) return [...entries];
  const successors = entries.map(() => [] as number[]);
  const waiting = entries.map(() => 0);
  entries.forEach((from, i) => {
    const produced = new Set(from.hook.produces);
    entries.forEach((to, j) => {
      if (i !== j && to.hook.consumes.some((artifact) => produced.has(artifact))) {
        successors[i]?.push(j);
        waiting[j] = (waiting[j] ?? 0) + 1;
      }
    });
  });
  const sortIds = (ids: number[]): number[] => ids.sort((a, b) => byCapId(entries[a] as Entry<T>, entries[b] as Entry<T>));
  const queue = sortIds(entries.flatMap((_, i) => (waiting[i] === 0 ? [i] : [])));
  const order: number[] = [];
  while (queue.length > 0) {
    const next = queue.shift() as number;
    order.push(next);
    const ready: number[] = [];
    for (const successor of successors[next] ?? []) {
      waiting[successor] = (waiting[successor] ?? 0) - 1;
      if (waiting[successor] === 0) ready.push(successor);
    }
    queue.push(...sortIds(ready));
  }
  // The load refuses a cycle (load.ts), so this only keeps a pure caller's entries.
  const rest = sortIds(entries.flatMap((_, i) => (order.includes(i) ? [] : [i])));
  return [...order, ...rest].map((i) => entries[i] as Entry<T>);
}

/** Whether the capability is active: gsd-core's `activationKey` truthy, when it declares one. */
export function capabilityActive(capability: LoadedCapability): boolean {
  return whenHolds(capability.manifest.activationKey, capability.values);
}

/** A fragment as gsd-core projects it: the file's text inlined beside its path. */
function fragmentOf(capability: LoadedCapability, fragment: { readonly inline?: string; readonly path?: string } | undefined): Fragment | undefined {
  if (fragment === undefined) return undefined;
  const inline = fragment.inline ?? (fragment.path !== undefined ? capability.fragments.get(fragment.path) : undefined);
  return present({ inline, path: fragment.path });
}

/** The configValues' values from the capability's slice, by alias; a key the slice does not hold is left out (as gsd-core leaves out one it cannot find). */
function configValuesOf(capability: LoadedCapability, aliases: Readonly<Record<string, string>> | undefined): Record<string, unknown> | undefined {
  if (aliases === undefined) return undefined;
  const resolved = Object.fromEntries(
    Object.entries(aliases).flatMap(([alias, key]) => (Object.hasOwn(capability.values, key) ? [[alias, capability.values[key]]] : [])),
  );
  return Object.keys(resolved).length > 0 ? resolved : undefined;
}

const byIdThenOrder = (capabilities: readonly LoadedCapability[]): LoadedCapability[] =>
  [...capabilities].sort((a, b) => a.manifest.id.localeCompare(b.manifest.id, "en"));

/** The hooks active at `point`, in gsd-core's order (see the module comment). */
export function activeHooks(capabilities: readonly LoadedCapability[], point: LoopPoint): ActiveHook[] {
  const sorted = byIdThenOrder(capabilities);
  const at = <T extends { readonly point: LoopPoint }>(list: (capability: LoadedCapability) => readonly T[]): Entry<T>[] =>
    sorted.flatMap((capability) =>
      list(capability).flatMap((hook, index) => (hook.point === point ? [{ capId: capability.manifest.id, capability, index, hook }] : [])),
    );
  const holds = (entry: Entry<{ readonly when?: string }>): boolean =>
    capabilityActive(entry.capability) && whenHolds(entry.hook.when, entry.capability.values);

  const steps = materializedOrder(at((capability) => capability.manifest.steps))
    .filter(holds)
    .map(({ capId, capability, index, hook }): ActiveHook =>
      present({
        capId,
        kind: "step" as const,
        ref: present({ skill: hook.ref.skill, agent: hook.ref.agent, command: hook.ref.command }),
        fragment: fragmentOf(capability, hook.fragment),
        when: hook.when,
        produces: hook.produces,
        consumes: hook.consumes,
        onError: hook.onError,
        source: `steps[${index}]`,
      }),
    );
  const contributions = materializedOrder(at((capability) => capability.manifest.contributions))
    .filter(holds)
    .map(({ capId, capability, index, hook }): ActiveHook =>
      present({
        capId,
        kind: "contribution" as const,
        into: hook.into,
        fragment: fragmentOf(capability, hook.fragment) ?? {},
        when: hook.when,
        produces: hook.produces,
        consumes: hook.consumes,
        onError: hook.onError,
        configValues: configValuesOf(capability, hook.configValues),
        source: `contributions[${index}]`,
      }),
    );
  const gates = at((capability) => capability.manifest.gates)
    .sort(byCapId)
    .filter(holds)
    .map(({ capId, index, hook }): ActiveHook =>
      present({
        capId,
        kind: "gate" as const,
        when: hook.when,
        check: hook.check,
        blocking: hook.blocking,
        onError: hook.onError,
        message: hook.message,
        source: `gates[${index}]`,
      }),
    );
  return [...steps, ...contributions, ...gates];
}

/** The lines a hook's produces, consumes, when and onError render as. */
function detailLines(hook: {
  readonly produces?: readonly string[];
  readonly consumes?: readonly string[];
  readonly when?: string;
  readonly onError?: string;
}): string[] {
  return [
    ...(hook.produces !== undefined && hook.produces.length > 0 ? [`- produces: ${hook.produces.join(", ")}`] : []),
    ...(hook.consumes !== undefined && hook.consumes.length > 0 ? [`- consumes: ${hook.consumes.join(", ")}`] : []),
    ...(hook.when ? [`- when: \`${hook.when}\``] : []),
    ...(hook.onError ? [`- onError: ${hook.onError}`] : []),
  ];
}

/**
 * The hooks as gsd-core renders them, byte for byte: a step's heading names its skill or agent
 * (another ref as its JSON), a contribution's text goes verbatim between tags naming where it
 * comes from and where it goes, a gate is one line with its check as JSON. Deterministic.
 */
export function renderHooks(point: LoopPoint, hooks: readonly ActiveHook[]): string {
  if (hooks.length === 0) return `_No active hooks at ${point}._`;
  const lines: string[] = [];
  let step = 0;
  for (const hook of hooks) {
    switch (hook.kind) {
      case "step": {
        step += 1;
        const target = hook.ref.skill ? `skill:${hook.ref.skill}` : hook.ref.agent ? `agent:${hook.ref.agent}` : JSON.stringify(hook.ref);
        lines.push(`### Step ${step}: ${target} (${hook.capId})`, ...detailLines(hook));
        if (hook.fragment?.inline) lines.push("", hook.fragment.inline);
        else if (hook.fragment?.path) lines.push("", `_Step fragment path is declared but not rendered by loop-resolver: ${hook.fragment.path}_`);
        lines.push("");
        break;
      }
      case "contribution":
        lines.push(`<contribution from="${hook.capId}" into="${hook.into}">`);
        if (hook.fragment.inline) lines.push(hook.fragment.inline);
        else if (hook.fragment.path) lines.push(`_Contribution fragment path is declared but not rendered by loop-resolver: ${hook.fragment.path}_`);
        lines.push(...detailLines(hook), "</contribution>", "");
        break;
      case "gate":
        lines.push(`**Gate** (${hook.capId}): check=${JSON.stringify(hook.check)}, blocking=${String(hook.blocking)}, onError=${hook.onError}`);
        if (hook.when) lines.push(`- when: \`${hook.when}\``);
        lines.push("");
        break;
    }
  }
  while (lines.at(-1) === "") lines.pop();
  return lines.join("\n");
}

/** What `the-loop loop render-hooks POINT --raw` prints: `point`, `activeHooks`, `rendered`, and `warnings` only when there are any. */
export function hookEnvelope(capabilities: readonly LoadedCapability[], point: LoopPoint, warnings: readonly string[] = []): HookEnvelope {
  const hooks = activeHooks(capabilities, point);
  return { point, activeHooks: hooks, rendered: renderHooks(point, hooks), ...(warnings.length > 0 ? { warnings } : {}) };
}

/**
 * A fragment's text, verbatim, for an assignment: the manifest's inline text when it has one (it
 * wins over a path, as in gsd-core), else its file read again from inside the bundle (re-checked to
 * be inside) when it is still the file consented to — a `ConsentChangedError` otherwise, and the
 * text is not used.
 */
export async function fragmentText(capability: LoadedCapability, fragment: Fragment): Promise<string> {
  const declared = [...capability.manifest.steps, ...capability.manifest.contributions]
    .map((hook) => hook.fragment)
    .find((candidate) => candidate !== undefined && candidate.path === fragment.path && (fragment.path !== undefined || candidate.inline === fragment.inline));
  if (declared?.inline !== undefined) return declared.inline;
  if (fragment.path !== undefined) return (await consentedFile(capability, fragment.path, "fragment.path")).toString("utf8");
  if (fragment.inline !== undefined) return fragment.inline;
  throw new CapabilityError([`${capability.file}: a fragment has a "path" or an "inline" key`]);
}
