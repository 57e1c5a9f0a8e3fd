import { readFileSync } from "node:fs";

/** The package's version, read from the package.json shipped next to dist/. */
export function packageVersion(): string {
  const text = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  return (JSON.parse(text) as { version: string }).version;
}
