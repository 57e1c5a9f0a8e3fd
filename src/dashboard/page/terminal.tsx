import { Terminal } from "@xterm/xterm";
import type { ITheme } from "@xterm/xterm";
import { useEffect, useRef, useState } from "preact/hooks";
import { terminalStreamUrl } from "./api.js";
import { screenWrite } from "./screen.js";
import { parseAnswer } from "./answers.js";
import type { Screen } from "./model.js";

/**
 * A read-only view of the agent's terminal: a real terminal renderer (xterm.js) drawing each
 * snapshot of the tmux pane the daemon streams. It can never send keys: standard input is
 * disabled, nothing listens for the terminal's input (no onData), and the API has no route that
 * would take them.
 */

const LIGHT: ITheme = { background: "#fbfbfd", foreground: "#1d1f24", cursor: "#1d1f24", selectionBackground: "#b7d3f5" };
const DARK: ITheme = { background: "#101217", foreground: "#d7dae0", cursor: "#d7dae0", selectionBackground: "#34507a" };

type State = "connecting" | "live" | "ended" | "none" | "unreadable" | "elsewhere";

/**
 * `elsewhere`: the host the session runs on when it is not this dashboard's (state.store:
 * postgres); its pane is on that host's tmux, so the view says so instead of connecting.
 */
export function TerminalView({ refName, live, elsewhere }: { refName: string; live: boolean; elsewhere?: string | undefined }) {
  const host = useRef<HTMLDivElement>(null);
  const [state, setState] = useState<State>("connecting");
  const [size, setSize] = useState<string>("");
  const [problem, setProblem] = useState<string>("");

  useEffect(() => {
    const element = host.current;
    if (elsewhere !== undefined) {
      setState("elsewhere");
      return undefined;
    }
    if (element === null || !live) {
      setState("none");
      return undefined;
    }
    const dark = window.matchMedia("(prefers-color-scheme: dark)");
    const terminal = new Terminal({
      disableStdin: true,
      cursorBlink: false,
      cursorInactiveStyle: "none",
      scrollback: 0,
      convertEol: false,
      fontSize: 13,
      fontFamily: 'ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace',
      theme: dark.matches ? DARK : LIGHT,
      rows: 24,
      cols: 80,
    });
    terminal.open(element);
    // The helper textarea xterm types into: read-only, and out of the tab order, so no key lands there.
    const textarea = element.querySelector("textarea");
    if (textarea !== null) {
      textarea.readOnly = true;
      textarea.tabIndex = -1;
      textarea.setAttribute("aria-hidden", "true");
    }
    const scheme = (): void => {
      terminal.options.theme = dark.matches ? DARK : LIGHT;
    };
    dark.addEventListener("change", scheme);
    setState("connecting");
    const source = new EventSource(terminalStreamUrl(refName));
    source.addEventListener("screen", (message) => {
      let screen: Screen;
      try {
        if (!(message instanceof MessageEvent) || typeof message.data !== "string") throw new Error("The terminal stream sent a message with no text.");
        screen = parseAnswer("screen", JSON.parse(message.data));
      } catch (error) {
        // A snapshot that is not the contract's draws nothing and says why; the next good one draws again.
        setProblem(
          error instanceof SyntaxError ? "The terminal stream sent a snapshot that is not JSON." : error instanceof Error ? error.message : String(error),
        );
        setState("unreadable");
        return;
      }
      setProblem("");
      setState("live");
      if (screen.cols > 0 && screen.rows > 0 && (screen.cols !== terminal.cols || screen.rows !== terminal.rows)) {
        terminal.resize(Math.min(screen.cols, 500), Math.min(screen.rows, 200));
        setSize(`${screen.cols}×${screen.rows}`);
      }
      terminal.write(screenWrite(screen.text));
    });
    source.addEventListener("ended", () => {
      setState("ended");
      source.close();
    });
    source.addEventListener("error", () => {
      // Closed by the server (404: no live session) or dropped: the browser retries a dropped stream itself.
      if (source.readyState === EventSource.CLOSED) setState((now) => (now === "ended" ? now : "none"));
    });
    return () => {
      source.close();
      dark.removeEventListener("change", scheme);
      terminal.dispose();
    };
  }, [refName, live, elsewhere]);

  const note =
    state === "live"
      ? `live, read-only${size !== "" ? ` · ${size}` : ""}`
      : state === "connecting"
        ? "connecting…"
        : state === "ended"
          ? "the session ended"
          : state === "unreadable"
            ? "unreadable snapshot"
            : state === "elsewhere"
              ? `on ${elsewhere ?? "another host"}, not available here`
              : "no live session";
  return (
    <section class="panel terminal-panel" aria-labelledby="terminal-title">
      <header class="panel-header">
        <h2 id="terminal-title">Terminal</h2>
        <span class={`terminal-state terminal-${state}`} role="status">
          {note}
        </span>
      </header>
      <div class="terminal-scroll">
        <div class="terminal-host" ref={host} data-state={state} />
      </div>
      {state === "unreadable" ? (
        <p class="error" role="alert">
          {problem}
        </p>
      ) : null}
      {state === "none" || state === "ended" ? <p class="hint">Nothing to show: the terminal appears while the item has a live session.</p> : null}
      {state === "elsewhere" ? (
        <p class="hint" data-testid="terminal-elsewhere">
          {`The session runs on ${elsewhere ?? "another host"}, not on this dashboard's host: \`the-loop sessions attach --work-item ${refName}\` prints the ssh command that reaches it.`}
        </p>
      ) : null}
    </section>
  );
}
