/**
 * The dashboard's public surface (docs/architecture.md, "Floors"; docs/dashboard.md): its HTTP
 * server, the security decisions it makes, and the read models of its API. Importers name the
 * module itself.
 */
export { DashboardServer } from "./server.js";
export type { DashboardDeps, DashboardListening } from "./server.js";
export { COOKIE_NAME, LoginBook, admitRequest, bindDecision, hostAllowed, identityOf, isLoopback, originAllowed, parseCookies, sessionCookie } from "./auth.js";
export type { Admission, BindDecision, DashboardIdentity, RequestFacts } from "./auth.js";
export { BOARD_COLUMNS, boardColumn, eventQueryOf, listItems } from "./read.js";
export type { BoardColumn, ItemRow } from "./read.js";
export { DASHBOARD_ACTIONS, runAction } from "./actions.js";
export { COMMENTS_MAX, commentView, commentsDocument } from "./comments.js";
export type { CommentView } from "./comments.js";
export { TERMINAL_POLL_MS, TERMINAL_STREAMS_MAX, TerminalFeeds, cleanScreenLine, screenFrame } from "./terminal.js";
export type { PaneCapture, ScreenFrame, TerminalListener, TerminalPorts } from "./terminal.js";
export type { ActionPorts, ActionResult, DashboardAction } from "./actions.js";
export { RESPONSE_SCHEMAS, RESPONSE_SCHEMAS_SECTION, renderResponseSchemas } from "./schemas.js";
