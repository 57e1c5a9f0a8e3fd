/**
 * For a harness that picks its conversation's id itself and takes none up front (Codex): what it
 * needs to find the id of the conversation it just began, read off the harness's own files.
 */
export interface LearnSessionIdInput {
  /** The folder the harness was started in. */
  readonly cwd: string;
  /** The environment it runs with: where its files are. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Just before it was started: its conversation begins after. */
  readonly startedAt: Date;
  /** The session's work item, which its boot prompt names: it tells apart conversations begun in one folder at once. */
  readonly workItem?: string;
  /** Stops the search (the daemon is draining). */
  readonly signal?: AbortSignal;
}
