/**
 * Prefixes the prompt every new session boots on with the operator's own instructions: the house
 * rules an agent should read before the work item itself.
 *
 *   hooks:
 *     - name: house-rules
 *       path: hooks/prompt-prefix.ts
 *       with: {prefix: "Follow CONTRIBUTING.md. Never push to main."}
 */
import { LifecycleHooks } from "the-loop/sdk/hooks";
import type { SessionSpawnContext } from "the-loop/sdk/hooks";

export interface PromptPrefixOptions {
  /** The text put before the prompt, separated from it by a blank line. */
  readonly prefix?: string;
}

export class PromptPrefix extends LifecycleHooks {
  private readonly prefix: string;

  constructor(options: PromptPrefixOptions = {}) {
    super();
    // An empty prefix would make the hook a no-op nobody notices; say so at load instead.
    if (typeof options.prefix !== "string" || options.prefix.trim() === "") {
      throw new TypeError('with.prefix must be the text to put before every session\'s prompt, e.g. with: {prefix: "Follow CONTRIBUTING.md."}');
    }
    this.prefix = options.prefix.trim();
  }

  override sessionSpawn(context: SessionSpawnContext): SessionSpawnContext {
    return { ...context, prompt: `${this.prefix}\n\n${context.prompt}` };
  }
}
