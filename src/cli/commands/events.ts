import { ExitError } from "../../errors.js";
import type { GlobalOptions } from "../context.js";

export interface EventsOptions {
  readonly type: string[];
  readonly workItem?: string;
  readonly source?: string;
  readonly level?: string;
  readonly since?: string;
  readonly limit: number;
  readonly format: "table" | "json" | "jsonl";
  readonly json: boolean;
  readonly follow: boolean;
  readonly types: boolean;
  readonly file?: string;
}

export async function runEvents(_globals: GlobalOptions, _options: EventsOptions): Promise<void> {
  throw new ExitError("the events command is being built");
}
