import { messageOf } from "../errors.js";
import type { PostgresTranscriptTails } from "../state/postgres/transcript-tails.js";
import { transcriptTail } from "./tail.js";

export interface TailKeeperOptions {
  readonly tails: Pick<PostgresTranscriptTails, "write">;
  /** The pane's text, scrollback included (TmuxRunner.capture); throws when the pane is gone. */
  readonly capture: (target: string) => Promise<string>;
  /** The sessions whose tails this daemon keeps: the active ones it owns. */
  readonly sessions: () => readonly { readonly ref: string; readonly target: string }[];
  readonly daemon: string;
  readonly warn: (message: string) => void;
}

/**
 * Keeps each owned session's transcript tail in the database (docs/scale.md, "The transcript
 * tail"): at each look, one capture of its pane and — only when the capped, redacted tail changed
 * — one write. A pane that cannot be read is skipped (its harness ended, or is being started).
 */
export class TailKeeper {
  private readonly written = new Map<string, string>();
  private failing = false;

  constructor(private readonly options: TailKeeperOptions) {}

  /** One look at every session; how many tails were written. */
  async once(): Promise<number> {
    const sessions = this.options.sessions();
    const listed = new Set(sessions.map((session) => session.ref));
    for (const ref of [...this.written.keys()]) if (!listed.has(ref)) this.written.delete(ref);
    let wrote = 0;
    for (const { ref, target } of sessions) {
      let text: string;
      try {
        text = await this.options.capture(target);
      } catch {
        // No pane to read now: the next look tries again, and the tail kept before stays.
        continue;
      }
      const tail = transcriptTail(text);
      if (this.written.get(ref) === tail) continue;
      try {
        await this.options.tails.write(ref, this.options.daemon, target, tail);
        this.written.set(ref, tail);
        wrote += 1;
        this.failing = false;
      } catch (error) {
        if (!this.failing)
          this.options.warn(`could not keep the transcript tail of ${ref} in the database: ${messageOf(error)}; an adoption would start without the latest`);
        this.failing = true;
      }
    }
    return wrote;
  }
}
