import { UsageError } from "../errors.js";
import { rememberSecret } from "../secrets.js";
import type { SessionCredential } from "../daemon/socket/rpc.js";
import { SESSION_TOKEN_ENV } from "../sessions/credential.js";
import { SESSION_SOCKET_ENV } from "../sessions/session-env.js";

/**
 * What a command learns from running inside an agent session: the credential the daemon gave
 * the session (THE_LOOP_SESSION_TOKEN, with THE_LOOP_WORK_ITEM naming its item). A command a
 * session may run presents it; an operator command refuses to run where it is set.
 */

/** The session's credential, when this process runs inside one; remembered as a secret so no output quotes it. */
export function sessionCredential(env: NodeJS.ProcessEnv = process.env): SessionCredential | undefined {
  const token = env[SESSION_TOKEN_ENV];
  if (token === undefined || token === "") return undefined;
  rememberSecret(token);
  const workItem = env.THE_LOOP_WORK_ITEM;
  if (workItem === undefined || workItem === "") {
    throw new UsageError(
      `${SESSION_TOKEN_ENV} is set but THE_LOOP_WORK_ITEM is not: a session's environment has both; run this inside the session the-loop started`,
    );
  }
  return { workItem, token };
}

/** Refuses an operator command run inside an agent session. */
export function refuseInsideSession(command: string, env: NodeJS.ProcessEnv = process.env): void {
  const token = env[SESSION_TOKEN_ENV];
  if (token === undefined || token === "") return;
  throw new UsageError(
    `\`the-loop ${command}\` is an operator command and does not run inside an agent session (${SESSION_TOKEN_ENV} is set); the operator runs it from their own terminal`,
  );
}

/**
 * The session's own socket, when the daemon gave the session one (THE_LOOP_SESSION_SOCKET): a
 * command inside the session talks to it and needs no config or state root.
 */
export function sessionSocket(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const path = env[SESSION_SOCKET_ENV];
  return path === undefined || path === "" ? undefined : path;
}
