/**
 * The layering rule of src/, checked by `npm run lint` (docs/architecture.md, "Floors").
 *
 * Folders stand on floors and import downward only; within a floor, folders do not import each
 * other. Type-only imports count: a reader follows them too.
 *
 * A folder's index.ts is its public surface: another folder may import only the modules it names
 * (following the index files it re-exports from). Importers name the module itself rather than the
 * index: a re-exporting index loads every module it names, so importing config/ or trackers/
 * through theirs would load zod and Octokit into every command (measured: `item list` 227 →
 * ~300 ms), undoing the CLI's lazy loading. A module the index does not name is its folder's own.
 */
const fs = require("node:fs");
const path = require("node:path");

/** From the ground up. A folder may import only folders on lower floors. */
const FLOORS = [
  ["errors.ts", "secrets.ts"],
  ["sdk", "workitem", "subprocess"],
  ["state", "events", "sandbox"],
  ["config", "why"],
  ["registry", "notify", "fleet"],
  ["trackers", "harness", "budget"],
  ["workspace", "hooks", "control"],
  ["routing", "graph"],
  ["graph-run"],
  ["graph-loop"],
  ["capabilities"],
  ["ingress"],
  ["feedback"],
  ["sessions", "stores"],
  ["graph-driver", "supervision"],
  ["dispatch"],
  ["adoption"],
  ["forwarding"],
  ["dashboard"],
  ["daemon"],
  ["mcp"],
  ["cli", "demo", "docs"],
];

const pathOf = (name) => (name.endsWith(".ts") ? `^src/${name.replace(".", "\\.")}$` : `^src/${name}/`);

const upward = FLOORS.flatMap((floor, level) =>
  floor.map((folder) => {
    const notBelow = FLOORS.slice(level)
      .flat()
      .filter((other) => other !== folder);
    return {
      name: `floor-${folder}`,
      comment: `${folder} stands on floor ${level}: it imports only folders below it (${FLOORS.slice(0, level).flat().join(", ") || "nothing"})`,
      severity: "error",
      from: { path: pathOf(folder) },
      to: { path: notBelow.map(pathOf) },
    };
  }),
);

/** The modules `src/<folder>/index.ts` names, following the index files it re-exports from. */
function surfaceOf(folder) {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file) || !fs.existsSync(path.join(__dirname, file))) return;
    seen.add(file);
    if (!file.endsWith("/index.ts")) return;
    const text = fs.readFileSync(path.join(__dirname, file), "utf8");
    for (const match of text.matchAll(/\bfrom\s+"(\.{1,2}\/[^"]+)\.js"/g)) {
      visit(path.posix.join(path.posix.dirname(file), `${match[1]}.ts`));
    }
  };
  visit(`src/${folder}/index.ts`);
  return [...seen];
}

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

const surfaces = FLOORS.flat()
  .filter((folder) => !folder.endsWith(".ts") && !["cli", "demo", "docs"].includes(folder))
  .map((folder) => ({
    name: `surface-${folder}`,
    comment: `another folder imports only what src/${folder}/index.ts names: add the module there (it is then public), or import one that is`,
    severity: "error",
    from: { pathNot: `^src/${folder}/` },
    to: { path: `^src/${folder}/`, pathNot: surfaceOf(folder).map((file) => `^${escape(file)}$`) },
  }));

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import cycle between files (and so, with the floors, none between folders).",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "sdk-stands-apart",
      comment: "The SDK imports only node: built-ins, so a hook author's bundle pulls in nothing of the daemon.",
      severity: "error",
      from: { path: "^src/sdk/" },
      to: { path: "^src/", pathNot: "^src/sdk/" },
    },
    ...upward,
    ...surfaces,
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    includeOnly: "^src/",
  },
};
