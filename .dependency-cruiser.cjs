/**
 * The layering rule of src/, checked by `npm run lint` (docs/architecture.md, "Floors").
 *
 * Folders stand on floors and import downward only; within a floor, folders do not import each
 * other. Type-only imports count: a reader follows them too.
 *
 * Not a rule yet: "another folder is imported through its index.ts only". A re-exporting index.ts
 * loads every module it names, so importing config/ or trackers/ through theirs would load zod and
 * Octokit into every command (measured: `item list` 227 → ~300 ms), undoing the CLI's lazy
 * loading. The rule comes once each surface is split by weight (docs/architecture.md, "Floors").
 */

/** From the ground up. A folder may import only folders on lower floors. */
const FLOORS = [
  ["errors.ts", "secrets.ts"],
  ["sdk", "workitem", "subprocess"],
  ["state", "events"],
  ["config"],
  ["registry"],
  ["trackers", "harness"],
  ["workspace", "hooks", "control"],
  ["routing", "graph"],
  ["capabilities"],
  ["ingress"],
  ["sessions"],
  ["daemon"],
  ["cli", "demo", "docs"],
];

const pathOf = (name) => (name.endsWith(".ts") ? `^src/${name.replace(".", "\\.")}$` : `^src/${name}/`);

const upward = FLOORS.flatMap((floor, level) =>
  floor.map((folder) => {
    const notBelow = FLOORS.slice(level).flat().filter((other) => other !== folder);
    return {
      name: `floor-${folder}`,
      comment: `${folder} stands on floor ${level}: it imports only folders below it (${FLOORS.slice(0, level).flat().join(", ") || "nothing"})`,
      severity: "error",
      from: { path: pathOf(folder) },
      to: { path: notBelow.map(pathOf) },
    };
  }),
);

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
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    includeOnly: "^src/",
  },
};
