/**
 * The read-only view of an item's terminal (docs/dashboard.md, "The terminal view"): the daemon
 * reads the session's tmux pane — never writes to it: there is no route that sends keys — and
 * streams each changed screen to the page's terminal renderer. One poller per pane, whatever the
 * number of browsers watching it, at most every TERMINAL_POLL_MS and only while one is connected.
 */

/** A pane as tmux shows it: its size, and `capture-pane -p -e`'s text (SGR sequences in it). */
export interface PaneCapture {
  readonly cols: number;
  readonly rows: number;
  readonly text: string;
}

/** What the page draws: the pane's size, and its visible lines joined by `\r\n`, colours kept, nothing else a terminal acts on. */
export interface ScreenFrame {
  readonly cols: number;
  readonly rows: number;
  readonly text: string;
}

/** How often a watched pane is read: at most 5 times a second. */
export const TERMINAL_POLL_MS = 200;
/** How many terminal streams the dashboard serves at once; one more is refused (503) until one closes. */
export const TERMINAL_STREAMS_MAX = 32;
/** A screen larger than this (a very wide pane full of colour changes) is cut. */
export const SCREEN_TEXT_MAX = 512 * 1024;
/** After this many failed reads in a row (5 s at the poll rate) a stream ends. */
const FAILURES_MAX = 25;

// Every escape sequence (CSI, OSC up to BEL or ST, DCS/SOS/PM/APC up to ST, any other escape pair),
// or one control character other than newline: the replacer keeps SGR (`ESC [ … m`) alone.
const SEQUENCES =
  // eslint-disable-next-line no-control-regex
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[PX^_][^\u001b]*(?:\u001b\\)?|\u001b[ -/]*[0-~]?|[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex
const SGR = /^\u001b\[[0-9;:]*m$/;

/** One line of a capture with its SGR sequences kept and every other sequence and control character gone (a tab is a space). */
export function cleanScreenLine(line: string): string {
  return line.replace(SEQUENCES, (match) => (SGR.test(match) ? match : match === "\t" ? " " : ""));
}

/**
 * A capture as the page draws it: at most `rows` lines (tmux ends each with a newline), each
 * cleaned, joined by `\r\n` so a terminal renderer starts each at its left edge; cut at
 * SCREEN_TEXT_MAX, never inside a sequence.
 */
export function screenFrame(capture: PaneCapture): ScreenFrame {
  const lines = capture.text.replace(/\r\n?/g, "\n").split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  let text = lines.slice(0, Math.max(0, capture.rows)).map(cleanScreenLine).join("\r\n");
  if (text.length > SCREEN_TEXT_MAX) {
    text = text.slice(0, SCREEN_TEXT_MAX);
    // A sequence cut in two would print its tail as text.
    const escape = text.lastIndexOf("\u001b");
    if (escape >= 0 && !SGR.test(/^\S*?m/.exec(text.slice(escape))?.[0] ?? "")) text = text.slice(0, escape);
  }
  return { cols: capture.cols, rows: capture.rows, text };
}

export interface TerminalPorts {
  /** The pane's current screen; undefined once its session is gone. */
  readonly capture: (target: string) => Promise<PaneCapture | undefined>;
  /** Whether `ref` still has the live session whose pane is `target`. */
  readonly live: (ref: string, target: string) => boolean;
}

export interface TerminalListener {
  screen(frame: ScreenFrame): void;
  ended(): void;
}

interface Feed {
  readonly ref: string;
  readonly target: string;
  readonly listeners: Set<TerminalListener>;
  last: ScreenFrame | undefined;
  timer: NodeJS.Timeout | undefined;
  failures: number;
  stopped: boolean;
}

/** The pollers of the panes being watched. */
export class TerminalFeeds {
  private readonly feeds = new Map<string, Feed>();
  private clients = 0;
  private readonly intervalMs: number;
  private readonly maxClients: number;

  constructor(
    private readonly ports: TerminalPorts,
    options: { readonly intervalMs?: number; readonly maxClients?: number } = {},
  ) {
    this.intervalMs = options.intervalMs ?? TERMINAL_POLL_MS;
    this.maxClients = options.maxClients ?? TERMINAL_STREAMS_MAX;
  }

  /** Whether TERMINAL_STREAMS_MAX viewers are watching already. */
  get full(): boolean {
    return this.clients >= this.maxClients;
  }

  /** How many panes are being read now (0 once the last viewer left). */
  get polling(): number {
    return this.feeds.size;
  }

  /**
   * Watches `target` (the pane of `ref`'s live session) for `listener`: the current screen at
   * once, then each change, then `ended` when the session is gone. Returns how to stop watching;
   * undefined when TERMINAL_STREAMS_MAX viewers are watching already.
   */
  watch(ref: string, target: string, listener: TerminalListener): (() => void) | undefined {
    if (this.clients >= this.maxClients) return undefined;
    this.clients++;
    const known = this.feeds.get(target);
    const watched = known ?? { ref, target, listeners: new Set(), last: undefined, timer: undefined, failures: 0, stopped: false };
    watched.listeners.add(listener);
    if (known === undefined) {
      this.feeds.set(target, watched);
      void this.tick(watched);
    } else if (known.last !== undefined) {
      listener.screen(known.last);
    }
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.clients--;
      watched.listeners.delete(listener);
      if (watched.listeners.size === 0) this.stop(watched);
    };
  }

  /** Ends every stream (the daemon is stopping). */
  stopAll(): void {
    for (const feed of [...this.feeds.values()]) this.end(feed);
  }

  private stop(feed: Feed): void {
    feed.stopped = true;
    if (feed.timer !== undefined) clearTimeout(feed.timer);
    if (this.feeds.get(feed.target) === feed) this.feeds.delete(feed.target);
  }

  private end(feed: Feed): void {
    this.stop(feed);
    for (const listener of [...feed.listeners]) listener.ended();
  }

  private async tick(feed: Feed): Promise<void> {
    if (feed.stopped) return;
    let capture: PaneCapture | undefined;
    let gone = !this.ports.live(feed.ref, feed.target);
    if (!gone) {
      try {
        capture = await this.ports.capture(feed.target);
        gone = capture === undefined;
        feed.failures = 0;
      } catch {
        // A read that failed (tmux busy, a timeout) is tried again at the next tick; many in a row end the stream.
        feed.failures++;
        if (feed.failures >= FAILURES_MAX) gone = true;
      }
    }
    if (feed.stopped) return;
    if (gone) return this.end(feed);
    if (capture !== undefined) {
      const frame = screenFrame(capture);
      const last = feed.last;
      if (last === undefined || last.text !== frame.text || last.cols !== frame.cols || last.rows !== frame.rows) {
        feed.last = frame;
        for (const listener of feed.listeners) listener.screen(frame);
      }
    }
    feed.timer = setTimeout(() => void this.tick(feed), this.intervalMs);
  }
}
