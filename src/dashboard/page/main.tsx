import "@xterm/xterm/css/xterm.css";
import "./styles.css";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api.js";
import { Board } from "./board.js";
import { EventsView } from "./events.js";
import { ItemView } from "./item.js";
import { parseRoute } from "./model.js";
import type { Me, Route } from "./model.js";
import { routeStyleElements } from "./style-sheets.js";

/**
 * The operator's dashboard (docs/dashboard.md, "The page"): the board, one item, the events. The
 * route is the URL's fragment, so the daemon serves one page and a view is a link to share.
 */

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const changed = (): void => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", changed);
    return () => window.removeEventListener("hashchange", changed);
  }, []);
  return route;
}

function App() {
  const route = useRoute();
  const [me, setMe] = useState<Me | undefined>(undefined);
  const [meError, setMeError] = useState<string | undefined>(undefined);
  const [filter, setFilter] = useState(route.view === "board" ? route.filter : "");

  useEffect(() => {
    api.me().then(setMe, (error: unknown) => setMeError(error instanceof Error ? error.message : String(error)));
  }, []);

  useEffect(() => {
    const title = route.view === "item" ? route.ref : route.view === "events" ? "events" : "board";
    document.title = `${title} · the-loop`;
    // A new view: the keyboard starts at its heading.
    document.querySelector<HTMLElement>("main h1")?.focus({ preventScroll: true });
  }, [route]);

  useEffect(() => {
    const keys = (event: KeyboardEvent): void => {
      const target = event.target as HTMLElement | null;
      const typing = target !== null && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
      if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.key === "/" && document.getElementById("board-filter") !== null) {
        event.preventDefault();
        document.getElementById("board-filter")?.focus();
      }
    };
    window.addEventListener("keydown", keys);
    return () => window.removeEventListener("keydown", keys);
  }, []);

  return (
    <>
      <a class="skip" href="#main">
        Skip to the content
      </a>
      <header class="top">
        <a class="brand" href="#/">
          <img src="/assets/icon.svg" alt="" width="22" height="22" />
          the-loop
        </a>
        <nav aria-label="Views">
          <a href="#/" aria-current={route.view === "board" || route.view === "item" ? "page" : undefined}>
            Board
          </a>
          <a href="#/events" aria-current={route.view === "events" ? "page" : undefined}>
            Events
          </a>
        </nav>
        <p class={`who ${me?.readOnly ? "who-readonly" : ""}`} data-testid="who">
          {me === undefined ? (meError ?? "…") : me.readOnly ? "read-only: no dashboard.operator" : `acting as ${me.operator ?? ""}`}
        </p>
      </header>
      <main id="main" tabIndex={-1}>
        {route.view === "board" ? <Board filter={filter} onFilter={setFilter} /> : null}
        {route.view === "item" ? <ItemView key={route.ref} refName={route.ref} me={me} /> : null}
        {route.view === "events" ? <EventsView key={route.query.toString()} query={route.query} /> : null}
      </main>
    </>
  );
}

routeStyleElements(document);
const root = document.getElementById("app");
if (root !== null) render(<App />, root);
