import { useEffect, useRef, useState } from "preact/hooks";
import { eventStreamUrl } from "./api.js";

/**
 * Live data: the page reads an answer once, then again whenever the event stream says something
 * changed (at most every REFRESH_MS, so a burst of events is one read), and every MAX_AGE_MS
 * regardless (ages and budgets move without an event).
 */

const REFRESH_MS = 120;
const MAX_AGE_MS = 15_000;

export type StreamState = "connecting" | "live" | "reconnecting";

/** Opens the event stream for `query` while mounted; `onEvent` is called for each new event. */
export function useEventStream(query: string | null, onEvent: () => void): StreamState {
  const [state, setState] = useState<StreamState>("connecting");
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    if (query === null) return undefined;
    const source = new EventSource(eventStreamUrl(new URLSearchParams(query)));
    source.addEventListener("open", () => setState("live"));
    source.addEventListener("error", () => setState("reconnecting"));
    source.addEventListener("event", () => handler.current());
    // After a reconnect the stream starts from now: what happened while it was away is read again.
    source.addEventListener("caught-up", () => handler.current());
    return () => source.close();
  }, [query]);
  return state;
}

export interface Live<T> {
  readonly data: T | undefined;
  readonly error: string | undefined;
  readonly stream: StreamState;
  /** Reads again now (after an action, say). */
  readonly refresh: () => void;
}

/** `read()` now, then again on each event of the stream `query` opens (null: none), throttled. */
export function useLive<T>(read: () => Promise<T>, key: string, query: string | null): Live<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const reader = useRef(read);
  reader.current = read;
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const generation = useRef(0);
  const inFlight = useRef(false);
  const again = useRef(false);

  const run = (): void => {
    if (inFlight.current) {
      again.current = true;
      return;
    }
    inFlight.current = true;
    const mine = generation.current;
    reader
      .current()
      .then(
        (value) => {
          if (mine !== generation.current) return;
          setData(value);
          setError(undefined);
        },
        (failure: unknown) => {
          if (mine !== generation.current) return;
          setError(failure instanceof Error ? failure.message : String(failure));
        },
      )
      .finally(() => {
        inFlight.current = false;
        if (again.current) {
          again.current = false;
          schedule();
        }
      });
  };
  const schedule = (): void => {
    if (timer.current !== undefined) return;
    timer.current = setTimeout(() => {
      timer.current = undefined;
      run();
    }, REFRESH_MS);
  };

  useEffect(() => {
    generation.current += 1;
    setData(undefined);
    setError(undefined);
    run();
    const tick = setInterval(run, MAX_AGE_MS);
    return () => {
      clearInterval(tick);
      if (timer.current !== undefined) clearTimeout(timer.current);
      timer.current = undefined;
      generation.current += 1;
    };
    // `key` names what is read: a new key is a new reading.
  }, [key]);
  const stream = useEventStream(query, schedule);
  return { data, error, stream, refresh: run };
}

/** The current time, moving every `everyMs`: cards' ages count up between reads. */
export function useNow(everyMs = 10_000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const tick = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(tick);
  }, [everyMs]);
  return now;
}
