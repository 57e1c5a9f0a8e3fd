/**
 * Notifications a person can act on (docs/notifications.md): moments among the daemon's events,
 * posted to the configured sinks with the item's link and the comment that moves it on.
 */
export { Notifier, STOP_GRACE_MS, followOtherProcesses, notifyKeywordsOf, teeEvents } from "./notifier.js";
export type { NotifierOptions } from "./notifier.js";
export { MOMENT_TABLE, eventTypesOf, momentOfType, noticeOf } from "./moments.js";
export type { MomentEvent, Notice, NotifyAction, NotifyKeywords } from "./moments.js";
export { DISCORD_MAX_CONTENT, bodyFor, escapeDiscord, escapeSlack, linkOf, plainText } from "./message.js";
export { SinkQueue, backoffMs, judgeAnswer, sinkUrl } from "./delivery.js";
export type { Delivery, NotifyTransport, PostResult, RetrySettings, TryOutcome } from "./delivery.js";
export { httpTransport, retryAfterSeconds } from "./http.js";
