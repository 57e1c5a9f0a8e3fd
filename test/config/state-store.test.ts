import { afterEach, describe, expect, it } from "vitest";
import { resolveStateStore } from "../../src/config/state-store.js";
import { configJsonSchema } from "../../src/config/json-schema.js";
import { redactSecrets, secretPaths } from "../../src/config/redact.js";
import { configSchema } from "../../src/config/schema.js";
import { forgetKnownSecrets, redactKnownSecrets } from "../../src/secrets.js";

const URL_A = "postgresql://loop:hunter2-hunter2@db.example:5432/loop";
const URL_B = "postgres://other@db.example/loop";

afterEach(() => forgetKnownSecrets());

describe("state.store", () => {
  it("is the file store by default, with the URL's variable named", () => {
    expect(configSchema.parse({}).state).toEqual({
      root: ".the-loop",
      store: "file",
      urlEnv: "THE_LOOP_STATE_URL",
      leaseSeconds: 30,
      heartbeatSeconds: 10,
      adoptGraceSeconds: 15,
      forwardWaitSeconds: 30,
    });
  });

  it("marks state.url a secret, so config show redacts it", () => {
    const paths = secretPaths(configJsonSchema());
    expect(paths).toContainEqual(["state", "url"]);
    const shown = redactSecrets(configSchema.parse({ state: { store: "postgres", url: URL_A } }), paths);
    expect(shown.state).toEqual({
      root: ".the-loop",
      store: "postgres",
      url: "[redacted]",
      urlEnv: "THE_LOOP_STATE_URL",
      leaseSeconds: 30,
      heartbeatSeconds: 10,
      adoptGraceSeconds: 15,
      forwardWaitSeconds: 30,
    });
  });

  it.each([
    [{ store: "sqlite" }, /state\.store/],
    [{ store: "postgres", url: "mysql://x" }, /state\.url/],
    [{ store: "postgres", urlEnv: "not a name" }, /state\.urlEnv/],
    [{ store: "postgres", forwardWaitSeconds: 0 }, /state\.forwardWaitSeconds/],
    [{ store: "postgres", forwardWaitSeconds: 1.5 }, /state\.forwardWaitSeconds/],
    [{ store: "postgres", forwardWaitSeconds: 601 }, /state\.forwardWaitSeconds/],
  ])("refuses %j", (state, path) => {
    const result = configSchema.safeParse({ state });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((issue) => issue.path.join("."))).toEqual([expect.stringMatching(path)]);
  });
});

describe("resolveStateStore", () => {
  const state = (fields: object) => configSchema.parse({ state: fields }).state;

  it.each([
    ["the file store, whatever the variable holds", { store: "file" }, { THE_LOOP_STATE_URL: URL_A }, { store: "file" }],
    ["the URL from the variable", { store: "postgres" }, { THE_LOOP_STATE_URL: URL_A }, { store: "postgres", url: URL_A, from: "$THE_LOOP_STATE_URL" }],
    [
      "the URL from a variable the config names",
      { store: "postgres", urlEnv: "DB_URL" },
      { DB_URL: URL_B, THE_LOOP_STATE_URL: URL_A },
      { store: "postgres", url: URL_B, from: "$DB_URL" },
    ],
    [
      "the config's URL before the variable",
      { store: "postgres", url: URL_B },
      { THE_LOOP_STATE_URL: URL_A },
      { store: "postgres", url: URL_B, from: "state.url" },
    ],
  ])("gives %s", (_case, fields, env, resolved) => {
    expect(resolveStateStore(state(fields), env)).toEqual(resolved);
  });

  it.each([
    ["no URL anywhere", {}, /no database URL is given: set \$THE_LOOP_STATE_URL \(state\.urlEnv\)/],
    ["an empty variable", { THE_LOOP_STATE_URL: "" }, /no database URL is given/],
    ["a variable that is no postgresql URL", { THE_LOOP_STATE_URL: "host=db user=loop" }, /^\$THE_LOOP_STATE_URL is not a postgresql:\/\/ URL/],
  ])("refuses postgres with %s, saying what to set (exit 2)", (_case, env, message) => {
    const error = (() => {
      try {
        resolveStateStore(state({ store: "postgres" }), env);
      } catch (caught) {
        return caught as { message: string; exitCode: number };
      }
      return undefined;
    })();
    expect(error?.message).toMatch(message);
    expect(error?.exitCode).toBe(2);
  });

  it("remembers the URL as a secret once read, so no sink writes it", () => {
    resolveStateStore(state({ store: "postgres" }), { THE_LOOP_STATE_URL: URL_A });
    expect(redactKnownSecrets(`could not reach ${URL_A}`)).toBe("could not reach [redacted]");
  });
});
