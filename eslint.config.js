import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "coverage/", "node_modules/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      // ESLint 10's recommended set adds these; held here so ESLint 9 (which runs on Node 20.18) checks the same.
      "no-unassigned-vars": "error",
      "no-useless-assignment": "error",
      "preserve-caught-error": "error",
      "no-console": "off",
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-restricted-properties": ["error", { object: "process", property: "exit", message: "Throw ExitError; src/cli/main.ts is the one exit point." }],
    },
  },
  {
    // A source file past 600 lines is holding two things (docs/architecture.md).
    files: ["src/**/*.ts"],
    rules: { "max-lines": ["error", { max: 600, skipBlankLines: false, skipComments: false }] },
  },
  {
    // The dashboard's page runs in a browser, and renders what trackers and agents wrote: as text, never as markup.
    files: ["src/dashboard/page/**"],
    languageOptions: { globals: globals.browser },
    rules: {
      "max-lines": ["error", { max: 600, skipBlankLines: false, skipComments: false }],
      "no-restricted-properties": [
        "error",
        ...["innerHTML", "outerHTML"].map((property) => ({ property, message: "Render text (textContent, or a JSX child): never markup." })),
        { property: "insertAdjacentHTML", message: "Render text (textContent, or a JSX child): never markup." },
        { object: "document", property: "write", message: "Render text (textContent, or a JSX child): never markup." },
      ],
      "no-restricted-syntax": [
        "error",
        { selector: "JSXAttribute[name.name='dangerouslySetInnerHTML']", message: "Render text (a JSX child): never markup." },
        { selector: "CallExpression[callee.name='eval'], NewExpression[callee.name='Function']", message: "No code from text: the page's CSP forbids it too." },
      ],
    },
  },
  {
    // CommonJS tool configs (.dependency-cruiser.cjs) load what they read with require().
    files: ["**/*.cjs"],
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
  {
    files: ["src/cli/main.ts", "test/**", "bench/**", "scripts/**"],
    rules: { "no-restricted-properties": "off" },
  },
);
