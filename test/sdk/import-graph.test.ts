import { existsSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

const SDK_DIR = resolve(REPO_ROOT, "dist/sdk/hooks");

interface Specifier {
  readonly file: string;
  readonly text: string | undefined;
}

/**
 * Every module specifier a built file names: static imports and re-exports, `import()` (a
 * computed one yields `text: undefined`, since where it leads cannot be checked), `require()`,
 * and the `import("…")` types of a declaration file. Parsing rather than matching text keeps
 * comments and string contents from counting as imports.
 */
function specifiersOf(file: string): Specifier[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const found: Specifier[] = [];
  const literal = (node: ts.Node | undefined): string | undefined => (node && ts.isStringLiteralLike(node) ? node.text : undefined);
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      found.push({ file, text: literal(node.moduleSpecifier) });
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      found.push({ file, text: literal(node.moduleReference.expression) });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      found.push({ file, text: literal(node.arguments[0]) });
    } else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "require") {
      found.push({ file, text: literal(node.arguments[0]) });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      found.push({ file, text: literal(node.argument.literal) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Walks the graph from `entry`; returns the files reached and every specifier that escapes `root`. */
function walk(entry: string, root = SDK_DIR): { files: string[]; escapes: string[] } {
  const seen = new Set<string>();
  const escapes: string[] = [];
  const pending = [entry];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    for (const { text } of specifiersOf(file)) {
      const where = relative(root, file);
      if (text === undefined) {
        escapes.push(`${where}: a computed specifier`);
      } else if (text.startsWith("node:")) {
        continue;
      } else if (!text.startsWith("./") && !text.startsWith("../")) {
        escapes.push(`${where}: ${text}`);
      } else {
        const target = declarationTarget(file, resolve(dirname(file), text));
        if (!target.startsWith(root + sep)) escapes.push(`${where}: ${text} (outside)`);
        else if (!existsSync(target)) escapes.push(`${where}: ${text} (no such file)`);
        else pending.push(target);
      }
    }
  }
  return { files: [...seen].map((file) => relative(root, file)).sort(), escapes };
}

/** A declaration file's `./x.js` names the types of `./x.d.ts`. */
function declarationTarget(from: string, target: string): string {
  return from.endsWith(".d.ts") && target.endsWith(".js") ? `${target.slice(0, -3)}.d.ts` : target;
}

describe("the SDK's import graph", () => {
  it("flags every way out of the walked directory, and only those", async () => {
    const root = await tempDir();
    await mkdir(join(root, "sdk"));
    await writeFile(join(root, "outside.js"), "");
    await writeFile(
      join(root, "sdk", "index.js"),
      [
        '/** Not an import: import { z } from "zod"; */',
        'import { readFileSync } from "node:fs";',
        'export * from "./inner.js";',
        'export { x } from "../outside.js";',
        'import "yaml";',
        "const name = 'x'; await import(name);",
        "const text = \"import y from 'commander'\";",
      ].join("\n"),
    );
    await writeFile(join(root, "sdk", "inner.js"), 'export const inner = await import("./missing.js");\n');
    const { files, escapes } = walk(join(root, "sdk", "index.js"), join(root, "sdk"));
    expect(files).toEqual(["index.js", "inner.js"]);
    expect(escapes.sort()).toEqual(
      ["index.js: ../outside.js (outside)", "index.js: yaml", "index.js: a computed specifier", "inner.js: ./missing.js (no such file)"].sort(),
    );
  });

  it.each(["index.js", "index.d.ts"])("reaches only node: built-ins and its own files from dist/sdk/hooks/%s", (entry) => {
    const { files, escapes } = walk(resolve(SDK_DIR, entry));
    expect(escapes).toEqual([]);
    const extension = entry.slice("index".length);
    expect(files).toEqual(expect.arrayContaining(["base", "catalog", "index", "protocol", "server"].map((name) => `${name}${extension}`)));
  });

  it("exposes the SDK through the package export the-loop/sdk/hooks", async () => {
    const sdk = (await import("the-loop/sdk/hooks")) as Record<string, unknown>;
    for (const name of ["LifecycleHooks", "LIFECYCLE_POINTS", "handleRequest", "HookServer"]) expect(sdk[name], name).toBeDefined();
    expect(typeof sdk.handleRequest).toBe("function");
    expect(typeof sdk.HookServer).toBe("function");
    expect(Array.isArray(sdk.LIFECYCLE_POINTS)).toBe(true);
  });
});
