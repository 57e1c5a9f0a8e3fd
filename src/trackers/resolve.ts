import { githubIntegrationSchema } from "../config/schema.js";
import type { GitHubIntegrationConfig } from "../config/schema.js";
import type { EventSink } from "../events/log.js";
import type { StatePaths } from "../state/layout.js";
import type { PostgresDatabase } from "../state/index.js";
import { formatWorkItemRef, parseWorkItemRef } from "../workitem/index.js";
import { GitHubClient, githubApiUrl, refHostForApiUrl } from "./github/client.js";
import type { GitHubClientOptions } from "./github/client.js";
import { UnsupportedGitHubHostError } from "./github/errors.js";
import { githubTokenSource } from "./github/token.js";
import { GitHubTracker } from "./github/tracker.js";
import { openLocalTracker } from "./local/index.js";
import type { LocalTracker } from "./local/index.js";
import type { Tracker } from "./tracker.js";

/** The trackers one process talks to, and which one owns a given work item. */
export interface TrackerSet {
  readonly local: LocalTracker;
  /**
   * The GitHub tracker of `integrations.github`, made on first use. Making it needs no token:
   * the token is read when the first request goes out. Optional so that a set built by hand
   * (a test's fake) need not have one; openTrackers always does.
   */
  readonly github?: GitHubTracker;
  /**
   * The tracker holding `ref`; throws UnsupportedTrackerError for a tracker not configured here
   * and UnsupportedGitHubHostError for a GitHub host the configured API does not serve.
   */
  forRef(ref: string): Tracker;
}

export class UnsupportedTrackerError extends Error {
  override readonly name: string = "UnsupportedTrackerError";
}

export interface OpenTrackersOptions {
  /** `integrations.github`; its defaults when omitted. */
  readonly github?: GitHubIntegrationConfig;
  /** Where the token variables and GITHUB_API_URL are read; process.env when omitted. */
  readonly env?: NodeJS.ProcessEnv;
  readonly fetch?: typeof fetch;
  /** Client tuning (tests turn write spacing off and shorten waits). */
  readonly githubClient?: Pick<GitHubClientOptions, "rateLimitWaitSeconds" | "requestTimeoutMs" | "spaceWrites" | "userAgent">;
  /** The state's database (state.store: postgres): the local tracker's projects are kept there, shared by every daemon on it. */
  readonly database?: PostgresDatabase | undefined;
}

/** The set openTrackers makes: always with a GitHub tracker. */
export interface OpenedTrackers extends TrackerSet {
  readonly github: GitHubTracker;
}

export function openTrackers(paths: StatePaths, events: EventSink, options: OpenTrackersOptions = {}): OpenedTrackers {
  const local = openLocalTracker({ trackerDir: paths.trackerDir, events, database: options.database });
  let github: GitHubTracker | undefined;
  const githubTracker = (): GitHubTracker => {
    if (!github) {
      const config = options.github ?? githubIntegrationSchema.parse({});
      const env = options.env ?? process.env;
      const apiUrl = githubApiUrl(config, env);
      const client: GitHubClient = new GitHubClient({
        ...options.githubClient,
        apiUrl,
        // The host is known before any token is: gh is asked for the login of the right host.
        tokens: githubTokenSource(config, env, { host: hostOrUndefined(apiUrl) }),
        ...(options.fetch ? { fetch: options.fetch } : {}),
      });
      github = new GitHubTracker(client, { selfLogin: config.selfLogin });
    }
    return github;
  };
  return {
    local,
    get github(): GitHubTracker {
      return githubTracker();
    },
    forRef(ref: string): Tracker {
      const parsed = parseWorkItemRef(ref);
      if (parsed.tracker === "local") return local;
      if (parsed.tracker === "github") {
        const tracker = githubTracker();
        const client = tracker.client;
        if (parsed.host !== client.host) {
          throw new UnsupportedGitHubHostError(formatWorkItemRef(parsed), parsed.host, client.apiUrl, client.host);
        }
        return tracker;
      }
      throw new UnsupportedTrackerError(`${ref}: no tracker for this work item in this version of the-loop`);
    },
  };
}

function hostOrUndefined(apiUrl: string): string | undefined {
  try {
    return refHostForApiUrl(apiUrl);
  } catch {
    // The client refuses the URL itself, with the message that says so.
    return undefined;
  }
}
