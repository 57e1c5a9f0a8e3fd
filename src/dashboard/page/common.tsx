import type { StreamState } from "./live.js";

/** Whether the view is following the daemon live. */
export function LiveBadge({ state }: { state: StreamState }) {
  const text = state === "live" ? "live" : state === "connecting" ? "connecting…" : "reconnecting…";
  return (
    <span class={`live live-${state}`} role="status" title="Updates arrive over the daemon's event stream, without a reload">
      <span class="live-dot" aria-hidden="true" />
      {text}
    </span>
  );
}

/** A time as `14:03:22` with the full ISO time on hover. */
export function Time({ iso }: { iso: string }) {
  const at = new Date(iso);
  const valid = !Number.isNaN(at.getTime());
  const today = valid && at.toDateString() === new Date().toDateString();
  const text = !valid ? iso : today ? at.toLocaleTimeString([], { hour12: false }) : at.toLocaleString([], { hour12: false });
  return (
    <time dateTime={iso} title={iso}>
      {text}
    </time>
  );
}
