/**
 * Regenerates test/fixtures/gsd-core/ from a built gsd-core checkout (docs/capabilities.md,
 * "Tests against gsd-core"): a few of its shipped capability bundles and its tutorial's bundle,
 * copied unchanged, and the envelope gsd-core's own `gsd-tools loop render-hooks <point> --raw`
 * prints for each of the twelve points — with the default config, and with each `when` (or
 * activation) key that defaults to off turned on.
 *
 *   npx tsx scripts/regenerate-gsd-core-fixtures.ts /path/to/gsd-core
 *
 * The checkout must be built (`tsc -p tsconfig.build.json` there writes gsd-core/bin/lib/*.cjs).
 * gsd-core renders from its generated first-party registry, so the script renders in a scratch
 * copy of the checkout whose capabilities/ keeps only the bundles stored here (and every
 * runtime-role descriptor, which its capability state needs), with that registry generated again
 * by gsd-core's own generator. Nothing of gsd-core's code is kept in the-loop: only its bundles
 * (MIT, credited in test/fixtures/gsd-core/README.md) and the outputs of its tool.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { LOOP_POINTS } from "../src/graph/types.js";

/** The shipped bundles stored: small, and between them every hook kind, a file fragment, configValues, an activationKey, gsd-core command modules and dotted queries. */
const SHIPPED = ["intel", "schema-gate", "security", "tdd", "ui"] as const;
const TUTORIAL = "hello-note";
// The twelve points, as the-loop knows them: gsd-core's host contract has the same list.
const POINTS = LOOP_POINTS;

const source = resolve(process.argv[2] ?? "");
if (!existsSync(join(source, "gsd-core/bin/gsd-tools.cjs")) || !existsSync(join(source, "gsd-core/bin/lib/loop-resolver.cjs"))) {
  console.error("usage: tsx scripts/regenerate-gsd-core-fixtures.ts <built gsd-core checkout> (run `tsc -p tsconfig.build.json` in it first)");
  process.exit(2);
}
const out = resolve("test/fixtures/gsd-core");
const commit = execFileSync("git", ["-C", source, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();

/** The tutorial's bundle, taken from its text: the manifest of Step 3 and the fragment of Step 2. */
function tutorialBundle(): Record<string, string> {
  const text = readFileSync(join(source, "docs/tutorials/build-your-first-capability.md"), "utf8");
  const manifest = /## Step 3[\s\S]*?```json\n([\s\S]*?)```/.exec(text)?.[1];
  const fragment = /cat > capabilities\/hello-note\/fragments\/plan-pre\.md << 'EOF'\n([\s\S]*?)\nEOF/.exec(text)?.[1];
  if (manifest === undefined || fragment === undefined) throw new Error("the tutorial no longer has the hello-note bundle where this script looks for it");
  return { "capability.json": manifest, "fragments/plan-pre.md": `${fragment}\n` };
}

rmSync(join(out, "bundles"), { recursive: true, force: true });
rmSync(join(out, "expected"), { recursive: true, force: true });
mkdirSync(join(out, "bundles"), { recursive: true });
mkdirSync(join(out, "expected"), { recursive: true });
for (const id of SHIPPED) cpSync(join(source, "capabilities", id), join(out, "bundles", id), { recursive: true });
for (const [path, content] of Object.entries(tutorialBundle())) {
  mkdirSync(join(out, "bundles", TUTORIAL, path, ".."), { recursive: true });
  writeFileSync(join(out, "bundles", TUTORIAL, path), content);
}

// A scratch gsd-core whose first-party set is exactly the stored bundles.
const scratch = mkdtempSync(join(tmpdir(), "gsd-core-fixtures-"));
const copy = join(scratch, "gsd-core");
cpSync(source, copy, { recursive: true, filter: (path) => !path.includes(`${source}/.git`) });
for (const id of readdirSync(join(copy, "capabilities"))) {
  const manifest = JSON.parse(readFileSync(join(copy, "capabilities", id, "capability.json"), "utf8")) as { role?: string };
  if (manifest.role === "feature" && !(SHIPPED as readonly string[]).includes(id)) rmSync(join(copy, "capabilities", id), { recursive: true });
}
cpSync(join(out, "bundles", TUTORIAL), join(copy, "capabilities", TUTORIAL), { recursive: true });
execFileSync("node", ["scripts/gen-capability-registry.cjs", "--write"], { cwd: copy, stdio: "inherit" });

interface Manifest {
  readonly activationKey?: string;
  readonly config?: Record<string, { readonly default?: unknown }>;
  readonly steps?: { readonly when?: string }[];
  readonly contributions?: { readonly when?: string }[];
  readonly gates?: { readonly when?: string }[];
}

/** Each `when` or activation key that is off by default, by the bundle declaring it. */
function keysOff(): { id: string; key: string }[] {
  const keys: { id: string; key: string }[] = [];
  for (const id of [...SHIPPED, TUTORIAL]) {
    const manifest = JSON.parse(readFileSync(join(out, "bundles", id, "capability.json"), "utf8")) as Manifest;
    const named = new Set([
      manifest.activationKey,
      ...[...(manifest.steps ?? []), ...(manifest.contributions ?? []), ...(manifest.gates ?? [])].map((hook) => hook.when),
    ]);
    for (const key of named) if (key !== undefined && manifest.config?.[key]?.default !== true) keys.push({ id, key });
  }
  return keys;
}

/** A `.planning/config.json` setting each dotted key, nested as gsd-core reads it. */
function nested(values: Record<string, unknown>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values)) {
    const segments = key.split(".");
    let at = root;
    for (const segment of segments.slice(0, -1)) at = (at[segment] ??= {}) as Record<string, unknown>;
    at[segments.at(-1) ?? key] = value;
  }
  return root;
}

const variants: { name: string; config: Record<string, Record<string, unknown>> }[] = [
  { name: "default", config: {} },
  ...keysOff().map(({ id, key }) => ({ name: `${key}-on`, config: { [id]: { [key]: true } } })),
];
for (const variant of variants) {
  const project = join(scratch, `project-${variant.name}`);
  mkdirSync(join(project, ".planning"), { recursive: true });
  const values = Object.assign({}, ...Object.values(variant.config)) as Record<string, unknown>;
  writeFileSync(join(project, ".planning/config.json"), `${JSON.stringify(nested(values), null, 2)}\n`);
  const envelopes: Record<string, unknown> = {};
  for (const point of POINTS) {
    const run = spawnSync("node", [join(copy, "gsd-core/bin/gsd-tools.cjs"), "loop", "render-hooks", point, "--raw"], {
      cwd: project,
      encoding: "utf8",
      env: { ...process.env, GSD_HOME: join(scratch, "home") },
    });
    if (run.status !== 0) throw new Error(`gsd-tools loop render-hooks ${point} exited ${run.status}: ${run.stderr}`);
    envelopes[point] = JSON.parse(run.stdout);
  }
  // `config` is what the-loop's entries set for the same run: capability id → its config values.
  writeFileSync(join(out, "expected", `${variant.name}.json`), `${JSON.stringify({ config: variant.config, envelopes }, null, 2)}\n`);
}

const unknown = spawnSync("node", [join(copy, "gsd-core/bin/gsd-tools.cjs"), "loop", "render-hooks", "plan:prepare", "--raw"], {
  cwd: scratch,
  encoding: "utf8",
});
writeFileSync(join(out, "expected", "unknown-point.json"), `${JSON.stringify({ point: "plan:prepare", exitCode: unknown.status }, null, 2)}\n`);

writeFileSync(
  join(out, "SOURCE.json"),
  `${JSON.stringify({ repository: "https://github.com/open-gsd/gsd-core", commit, license: "MIT", bundles: [...SHIPPED, TUTORIAL], variants: variants.map((variant) => variant.name) }, null, 2)}\n`,
);
rmSync(scratch, { recursive: true, force: true });
console.log(`wrote ${out} from gsd-core ${commit.slice(0, 12)}: ${SHIPPED.length + 1} bundles, ${variants.length} configs × ${POINTS.length} points`);
