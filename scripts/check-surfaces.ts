/**
 * The symbol half of the surface rule (docs/architecture.md, "Floors"): every name one folder of
 * src/ imports from another is exported by that folder's index.ts. dependency-cruiser checks the
 * module half (another folder imports only the modules an index names); this checks that the index
 * names each symbol, so index.ts is the exact, readable list of what a folder offers. Importers
 * still import the module itself, so a command loads only what it runs.
 *
 *   tsx scripts/check-surfaces.ts      (part of `npm run lint`)
 */
import { existsSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SRC = join(ROOT, "src");
/** Folders at the top of the floors: nothing imports them, so they offer no surface. */
const UNIMPORTED = new Set(["cli", "demo", "docs"]);

interface Use {
  readonly file: string;
  readonly line: number;
  readonly folder: string;
  readonly names: readonly string[] | "unknown";
}

/** The top folder of src/ a file is in, or undefined for a file at src/'s root (errors.ts, secrets.ts). */
function folderOf(file: string): string | undefined {
  const parts = relative(SRC, file).split(sep);
  return parts.length > 1 ? parts[0] : undefined;
}

function targetOf(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const target = resolve(dirname(from), specifier.replace(/\.js$/, ".ts"));
  return target.startsWith(SRC + sep) ? target : undefined;
}

function bindingNames(pattern: ts.BindingName): string[] | "unknown" {
  if (!ts.isObjectBindingPattern(pattern)) return "unknown";
  return pattern.elements.map((element) => (element.propertyName ?? element.name).getText());
}

/** What a dynamic `import()` takes: `const {a} = await import(x)`, `(await import(x)).a`, or one element of an awaited Promise.all destructured. */
function dynamicNames(call: ts.CallExpression): string[] | "unknown" {
  let node: ts.Node = call;
  if (ts.isArrayLiteralExpression(node.parent)) {
    const index = node.parent.elements.indexOf(call);
    const all = node.parent.parent;
    if (!ts.isCallExpression(all) || !ts.isAwaitExpression(all.parent) || !ts.isVariableDeclaration(all.parent.parent)) return "unknown";
    const binding = all.parent.parent.name;
    if (!ts.isArrayBindingPattern(binding)) return "unknown";
    const element = binding.elements[index];
    return element !== undefined && ts.isBindingElement(element) ? bindingNames(element.name) : "unknown";
  }
  if (!ts.isAwaitExpression(node.parent)) return "unknown";
  node = node.parent;
  if (ts.isVariableDeclaration(node.parent)) return bindingNames(node.parent.name);
  if (ts.isParenthesizedExpression(node.parent) && ts.isPropertyAccessExpression(node.parent.parent)) return [node.parent.parent.name.text];
  return "unknown";
}

function usesIn(source: ts.SourceFile): Use[] {
  const file = source.fileName;
  const own = folderOf(file);
  const uses: Use[] = [];
  const add = (node: ts.Node, specifier: string, names: readonly string[] | "unknown"): void => {
    const target = targetOf(file, specifier);
    const folder = target !== undefined ? folderOf(target) : undefined;
    if (folder === undefined || folder === own) return;
    uses.push({ file, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1, folder, names });
  };
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const specifier = node.moduleSpecifier.text;
      if (ts.isImportDeclaration(node)) {
        const clause = node.importClause;
        const bindings = clause?.namedBindings;
        if (clause?.name !== undefined || (bindings !== undefined && ts.isNamespaceImport(bindings))) add(node, specifier, "unknown");
        else if (bindings !== undefined)
          add(
            node,
            specifier,
            bindings.elements.map((element) => (element.propertyName ?? element.name).text),
          );
      } else {
        const clause = node.exportClause;
        add(
          node,
          specifier,
          clause !== undefined && ts.isNamedExports(clause) ? clause.elements.map((element) => (element.propertyName ?? element.name).text) : "unknown",
        );
      }
    }
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      if (argument !== undefined && ts.isStringLiteral(argument)) add(node, argument.text, dynamicNames(node));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return uses;
}

function main(): number {
  const config = ts.readConfigFile(join(ROOT, "tsconfig.json"), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const files = parsed.fileNames.filter((file) => file.startsWith(SRC + sep));
  const program = ts.createProgram(files, parsed.options);
  const checker = program.getTypeChecker();
  const surfaces = new Map<string, Set<string> | undefined>();
  const surfaceOf = (folder: string): Set<string> | undefined => {
    if (!surfaces.has(folder)) {
      const index = join(SRC, folder, "index.ts");
      const source = existsSync(index) ? program.getSourceFile(index) : undefined;
      const symbol = source !== undefined ? checker.getSymbolAtLocation(source) : undefined;
      surfaces.set(folder, symbol !== undefined ? new Set(checker.getExportsOfModule(symbol).map((exported) => exported.name)) : undefined);
    }
    return surfaces.get(folder);
  };
  const problems: string[] = [];
  for (const source of program.getSourceFiles()) {
    if (!source.fileName.startsWith(SRC + sep)) continue;
    for (const use of usesIn(source)) {
      const where = `${relative(ROOT, use.file)}:${use.line}`;
      if (UNIMPORTED.has(use.folder)) continue;
      const surface = surfaceOf(use.folder);
      if (surface === undefined) {
        problems.push(`${where}: src/${use.folder}/ has no index.ts to name what it offers`);
      } else if (use.names === "unknown") {
        problems.push(
          `${where}: imports src/${use.folder}/ as a whole (default, namespace or an unbound import()): name what it takes, from src/${use.folder}/index.ts's surface`,
        );
      } else {
        for (const name of use.names) {
          if (!surface.has(name))
            problems.push(`${where}: ${name} is not on src/${use.folder}/index.ts's surface: export it there (it becomes public), or use what is`);
        }
      }
    }
  }
  for (const problem of problems) process.stderr.write(`${problem}\n`);
  if (problems.length > 0) {
    process.stderr.write(`\n${problems.length} import${problems.length === 1 ? "" : "s"} outside a folder's surface (docs/architecture.md, "Floors")\n`);
    return 1;
  }
  return 0;
}

process.exitCode = main();
