import { createRequire } from "node:module";
import type * as Commander from "commander";

/**
 * commander, loaded through `require`: it is a CommonJS package, and Node's ESM wrapper around
 * CommonJS costs ~10 ms at every start — a third of the CLI's own start-up budget.
 */
const require = createRequire(import.meta.url);
export const commander = require("commander") as typeof Commander;

/** Columns every help text is wrapped to, commander's and the ones commands print themselves. */
export const HELP_WIDTH = 80;
