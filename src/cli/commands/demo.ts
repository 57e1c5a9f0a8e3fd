import { ExitError } from "../../errors.js";
import type { GlobalOptions } from "../context.js";

export interface DemoOptions {
  readonly keep: boolean;
}

export async function runDemo(_globals: GlobalOptions, _options: DemoOptions): Promise<void> {
  throw new ExitError("the demo is being built");
}
