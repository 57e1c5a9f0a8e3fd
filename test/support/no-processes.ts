import { createRequire, syncBuiltinESMExports } from "node:module";
import { afterEach } from "vitest";

/**
 * The unit project's promise: its tests start no process — no daemon, no tmux, no git, no child
 * of any kind. Loaded into every unit test file (vitest.config.ts), it replaces the functions of
 * `node:child_process` that start one with a function that throws and remembers the call; a test
 * that made one fails, naming the command, even if the code under test caught the throw. A test
 * that needs a real process belongs to the integration project.
 */

const childProcess = createRequire(import.meta.url)("node:child_process") as Record<string, unknown>;
const STARTERS = ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"] as const;

const attempts: string[] = [];

for (const name of STARTERS) {
  childProcess[name] = (...args: unknown[]): never => {
    const command = [args[0], ...(Array.isArray(args[1]) ? (args[1] as unknown[]) : [])].map(String).join(" ");
    attempts.push(`${name}(${command})`);
    throw new Error(`a unit test may not start a process (${name} ${command}): move the test file to the integration project`);
  };
}
// ESM importers of node:child_process see the replacements too.
syncBuiltinESMExports();

afterEach(() => {
  if (attempts.length === 0) return;
  const made = attempts.splice(0);
  throw new Error(`this unit test tried to start ${made.length} process(es): ${made.join("; ")} — it belongs to the integration project`);
});
