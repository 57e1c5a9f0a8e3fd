import { request as httpRequest } from "node:http";
import type { IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { NotifyTransport, PostResult } from "./delivery.js";

/**
 * The transport notifications go out on: one POST over node:http(s), which follows no redirect
 * (a sink's URL is a secret, and a body never goes where a server points). The answer's body is
 * not read beyond a few kilobytes: a sink's reply says nothing the-loop acts on but its status.
 * Errors name what went wrong by its code (ECONNREFUSED, a timeout), never the URL or its host.
 */

/** The most of a reply read before the connection is let go. */
const MAX_REPLY_BYTES = 64 * 1024;

/** A Retry-After header: seconds, or an HTTP date. Undefined when absent or unreadable. */
export function retryAfterSeconds(header: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === "") return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "a network error";
}

export const httpTransport: NotifyTransport = {
  post(url: URL, body: string, timeoutMs: number, signal: AbortSignal): Promise<PostResult> {
    if (signal.aborted) return Promise.reject(new Error("the daemon stopped"));
    const bytes = Buffer.from(body, "utf8");
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise<PostResult>((resolve, reject) => {
      let settled = false;
      const finish = (error: Error | undefined, result?: PostResult): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        if (error !== undefined) reject(error);
        else resolve(result ?? { status: 0 });
      };
      const request = send(
        url,
        {
          method: "POST",
          headers: { "content-type": "application/json", "content-length": String(bytes.byteLength), "user-agent": "the-loop" },
        },
        (response: IncomingMessage) => {
          const status = response.statusCode ?? 0;
          const retryAfter = retryAfterSeconds(response.headers["retry-after"]);
          const result: PostResult = retryAfter === undefined ? { status } : { status, retryAfterSeconds: retryAfter };
          let size = 0;
          response.on("data", (chunk: Buffer) => {
            size += chunk.byteLength;
            if (size > MAX_REPLY_BYTES) {
              finish(undefined, result);
              request.destroy();
            }
          });
          response.on("end", () => finish(undefined, result));
          response.on("error", () => finish(undefined, result));
        },
      );
      const timer = setTimeout(() => {
        finish(new Error(`no answer within ${timeoutMs / 1000} s`));
        request.destroy();
      }, timeoutMs);
      const onAbort = (): void => {
        finish(new Error("the daemon stopped"));
        request.destroy();
      };
      signal.addEventListener("abort", onAbort, { once: true });
      request.on("error", (error) => finish(new Error(reasonOf(error))));
      request.end(bytes);
    });
  },
};
