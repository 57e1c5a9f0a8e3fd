import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";

/**
 * Where `program` would be found when started with `path` as PATH: tmux runs a harness without a
 * shell, so a program that is not there leaves a dead pane and nothing else. Checking first turns
 * that into an error that names the fix.
 */
export function findExecutable(program: string, path: string, cwd: string): string | undefined {
  const candidates = program.includes("/")
    ? [isAbsolute(program) ? program : join(cwd, program)]
    : path
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, program));
  return candidates.find((candidate) => {
    try {
      accessSync(candidate, constants.X_OK);
      return statSync(candidate).isFile();
    } catch {
      return false;
    }
  });
}
