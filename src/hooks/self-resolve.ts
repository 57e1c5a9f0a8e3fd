import { readFileSync } from "node:fs";
import Module, { createRequire, register } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * An operator's hook file imports `the-loop/sdk/hooks`, yet nothing guarantees a
 * `node_modules/the-loop` above it: the-loop may run from a clone, `npx`, or a global install
 * (docs/hooks.md#writing-a-local-hook). So the import the hook file's folder cannot resolve is
 * resolved from the copy of the-loop that is loading the hook — the one whose SDK it is checked
 * against. A copy the folder does resolve is used as it is: the fallback only replaces a
 * "not found". Both of Node's resolvers are covered: an ES module's (a resolve hook registered
 * with `module.register`) and CommonJS's (tsx compiles a `.ts` file outside a `"type": "module"`
 * package to CommonJS, whose `require` no ES resolve hook sees on Node 20).
 */

const PACKAGE_NAME = "the-loop";

/** Whether `specifier` names the-loop or a subpath of it (`the-loop/sdk/hooks`). */
export function namesThisPackage(specifier: string): boolean {
  return specifier === PACKAGE_NAME || specifier.startsWith(`${PACKAGE_NAME}/`);
}

/** The package.json of the-loop that holds this module: dist/hooks/ or src/hooks/ under it. */
export function ownManifest(from: string = fileURLToPath(import.meta.url)): string | undefined {
  for (let dir = dirname(from); ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    try {
      const parsed: unknown = JSON.parse(readFileSync(manifest, "utf8"));
      if (typeof parsed === "object" && parsed !== null && Reflect.get(parsed, "name") === PACKAGE_NAME) return manifest;
    } catch {
      // No manifest here, or not ours: keep walking up.
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * The resolve hook, as source: it runs on Node's loader thread, which imports no file of ours (a
 * `.ts` one under a test runner could not load there). A package importing itself by name is
 * resolved by Node through its `exports`, so resolving from the-loop's own package.json gives
 * exactly what an installed copy would.
 */
const RESOLVE_HOOK = `
let parentURL;
export function initialize(data) { parentURL = data.parentURL; }
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (error) {
    const named = specifier === ${JSON.stringify(PACKAGE_NAME)} || specifier.startsWith(${JSON.stringify(`${PACKAGE_NAME}/`)});
    if (!named || error?.code !== "ERR_MODULE_NOT_FOUND" || context.parentURL === parentURL) throw error;
    return await next(specifier, { ...context, parentURL });
  }
}
`;

type ResolveFilename = (request: string, parent: unknown, isMain: boolean, options?: unknown) => string;

let installed = false;

/**
 * Makes `the-loop` resolvable from any hook file this process imports. Once per process; a no-op
 * where this module is not inside a the-loop package (nothing to map the name to).
 */
export function resolveThisPackageForHooks(): void {
  if (installed) return;
  installed = true;
  const manifest = ownManifest();
  if (manifest === undefined) return;
  const parentURL = pathToFileURL(manifest).href;
  register(`data:text/javascript,${encodeURIComponent(RESOLVE_HOOK)}`, { data: { parentURL } });

  const own = createRequire(manifest);
  // Module._resolveFilename is where every CommonJS `require` is resolved, tsx's included.
  const cjs = Module as unknown as { _resolveFilename: ResolveFilename };
  const original = cjs._resolveFilename;
  cjs._resolveFilename = function resolveFilename(request, parent, isMain, options) {
    try {
      return original.call(this, request, parent, isMain, options);
    } catch (error) {
      const code: unknown = typeof error === "object" && error !== null ? Reflect.get(error, "code") : undefined;
      if (code !== "MODULE_NOT_FOUND" || !namesThisPackage(request)) throw error;
      return own.resolve(request);
    }
  };
}
