import { readFileSync } from "node:fs";

/** The package's version, read from the package.json shipped next to dist/. */
export function packageVersion(): string {
  const text = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  const manifest: unknown = JSON.parse(text);
  const version = typeof manifest === "object" && manifest !== null && "version" in manifest ? manifest.version : undefined;
  if (typeof version !== "string") throw new Error("the package.json next to dist/ names no version");
  return version;
}
