import { relative, sep } from "node:path";
import { changedPaths, readBundleFiles, readRegularFile, sha256Of } from "./bundle-files.js";
import { CapabilityError, bundleFile, consentCommand } from "./load.js";
import type { CapabilityBundle } from "./load.js";

/**
 * Consent checked at the moment of use, not only at the load (docs/capabilities.md, "Consent"):
 * a file the-loop takes from a loaded bundle — a fragment it puts into an assignment, the bundle a
 * command or resolver runs from — is read and hashed then, and used only when it is still what
 * was consented to. A bundle edited while a daemon runs is refused, use by use, until it is
 * consented to again.
 */

/** A loaded bundle's file (or the bundle) no longer what was consented to: its use is refused. Exit 2. */
export class ConsentChangedError extends CapabilityError {
  override readonly name: string = "ConsentChangedError";
  constructor(
    readonly capability: string,
    readonly dir: string,
    /** The files that differ, by their path in the bundle. */
    readonly paths: readonly string[],
    /** Why the bundle could not be read at all, when it could not. */
    why?: string,
  ) {
    const what = why ?? `${paths.length === 1 ? "the file" : "the files"} ${paths.map((path) => JSON.stringify(path)).join(", ")}`;
    super([
      `capability "${capability}" (${dir}) changed since it was consented to (${what}); it was not used — read what changed, consent again with \`${consentCommand(dir)}\`, then restart a running daemon (\`the-loop stop && the-loop start\`)`,
    ]);
  }
}

type Consented = Pick<CapabilityBundle, "dir" | "realDir" | "files" | "sha256"> & { readonly manifest: { readonly id: string } };

/**
 * The bytes of the bundle file `path` names, read once, when they hash to what was consented to.
 * The file is looked up again inside the bundle (`bundleFile`); a `ConsentChangedError` when it
 * differs from the consented file, or was not part of the bundle at consent.
 */
export async function consentedFile(capability: Consented, path: string, field: string): Promise<Buffer> {
  const real = await bundleFile(capability.dir, path, field);
  const key = relative(capability.realDir, real).split(sep).join("/");
  const expected = capability.files.get(key);
  // Fails closed: a file that cannot be read now is refused as changed since consent.
  const bytes = await readRegularFile(real).catch(() => undefined);
  if (expected === undefined || bytes === undefined || sha256Of(bytes) !== expected)
    throw new ConsentChangedError(capability.manifest.id, capability.dir, [key]);
  return bytes;
}

/** Resolves when every file of the bundle is still what was consented to; a `ConsentChangedError` naming those that are not. */
export async function verifyConsented(capability: Consented): Promise<void> {
  const now = await readBundleFiles(capability.dir).catch((error: unknown) => error as Error);
  if (now instanceof Error) throw new ConsentChangedError(capability.manifest.id, capability.dir, [], now.message);
  if (now.problems.length > 0) throw new ConsentChangedError(capability.manifest.id, capability.dir, [], now.problems.join("; "));
  if (now.sha256 === capability.sha256) return;
  throw new ConsentChangedError(capability.manifest.id, capability.dir, changedPaths(capability.files, now.files));
}
