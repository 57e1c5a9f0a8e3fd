import { readFile, realpath } from "node:fs/promises";
import { DISCOVERY_PLACES } from "../../../config/load.js";
import { legacyPollStateMove, movePollStateFile, upgradeConfigText, upgradeOffers } from "../../../config/upgrade/config.js";
import type { DecisionNeeded, ConfigInsertion, UpgradeOffer } from "../../../config/upgrade/config.js";
import { webhookEventsOffers } from "../../../config/upgrade/webhook.js";
import { holderNote, readLock } from "../../../daemon/pidfile.js";
import { EXIT_FAILURE, ExitError, messageOf } from "../../../errors.js";
import { writeFileAtomic } from "../../../state/atomic.js";
import type { StatePaths } from "../../../state/layout.js";
import { displayPath, loadCommandConfig, printConfigWarnings } from "../../context.js";
import type { GlobalOptions } from "../../context.js";
import { stdout } from "../../output.js";

export interface UpgradeConfigOptions {
  readonly dryRun?: boolean;
  readonly movePollState?: boolean;
  readonly json?: boolean;
}

/** What `upgrade-config --json` prints. */
export interface UpgradeConfigReport {
  /** The config file upgraded; null when there is none (the defaults apply). */
  readonly config: string | null;
  readonly added: readonly string[];
  readonly needsDecision: readonly DecisionNeeded[];
  /** What the upgrade suggests but does not do unless asked (a moved file is no longer offered). */
  readonly offers: readonly UpgradeOffer[];
  readonly moved?: { readonly from: string; readonly to: string };
  /** Whether the run changed the config or moved a file — or, with --dry-run, would have. */
  readonly changed: boolean;
  readonly dryRun: boolean;
}

/**
 * `the-loop upgrade-config`: makes the settings execution control added explicit in the config
 * in use (state.root, routing.control, routing.mcp), each with its default, so an upgraded config behaves
 * exactly as it did and the operator can see — and decide — what the new defaults do. Offers the
 * move of a pre-state-root poll-state file, and makes it with --move-poll-state.
 */
export async function runUpgradeConfig(globals: GlobalOptions, options: UpgradeConfigOptions = {}): Promise<void> {
  const dryRun = options.dryRun === true;
  const loaded = await loadCommandConfig(globals);
  const file = loaded.source.path;
  if (file === null) {
    const report: UpgradeConfigReport = { config: null, added: [], needsDecision: [], offers: [], changed: false, dryRun };
    if (options.json) stdout.json(report);
    else {
      stdout.line(
        `no config file (looked for ${DISCOVERY_PLACES}): ` + "nothing to upgrade; the defaults already apply. `the-loop init` writes a commented config.",
      );
    }
    return;
  }
  printConfigWarnings(loaded);

  // A config reached through a symlink is rewritten where it lives, keeping the link.
  const target = await realpath(file);
  const shown = displayPath(file);
  const upgrade = upgradeConfigText(await readFile(target, "utf8"), shown);
  const offers = [...webhookEventsOffers(loaded.config), ...upgradeOffers(upgrade, loaded.paths)];

  const move = options.movePollState ? legacyPollStateMove(loaded.paths) : undefined;
  if (move) await refuseWhilePolling(loaded.paths, move.from);

  if (!dryRun) {
    // The config first: a move that then fails leaves a config that is upgraded and still right.
    if (upgrade.changed) {
      try {
        await writeFileAtomic(target, upgrade.text);
      } catch (error) {
        // Atomic: a failed write leaves the old file in place. A read-only mount is the usual cause.
        throw new ExitError(
          `could not write ${shown}: ${messageOf(error)}; it is unchanged${move ? ", and the poll state was not moved" : ""}. ` +
            "Let the-loop write it and its folder and run this again, or add the lines `the-loop upgrade-config --dry-run` shows by hand",
          EXIT_FAILURE,
        );
      }
    }
    if (move) {
      try {
        await movePollStateFile(move.from, move.to);
      } catch (error) {
        if (!upgrade.changed || !(error instanceof ExitError)) throw error;
        throw new ExitError(`${error.message}. ${shown} was upgraded all the same`, error.exitCode, error.code, error.details);
      }
    }
  }

  const moved = move && !dryRun ? move : undefined;
  const report: UpgradeConfigReport = {
    config: file,
    added: upgrade.added,
    needsDecision: upgrade.needsDecision,
    offers: moved ? offers.filter((offer) => offer.action !== "move-poll-state") : offers,
    ...(moved ? { moved } : {}),
    changed: upgrade.changed || move !== undefined,
    dryRun,
  };
  if (options.json) {
    stdout.json(report);
    return;
  }
  printReport(report, { shown, insertions: upgrade.insertions, move, askedToMove: options.movePollState === true });
}

/** The poller reads and rewrites the poll state every cycle: the file moves only while it is stopped. */
async function refuseWhilePolling(paths: Pick<StatePaths, "pollPidfile">, file: string): Promise<void> {
  const lock = await readLock(paths.pollPidfile);
  if (lock === undefined) return;
  throw new ExitError(
    `the poller is running (${lock.holder ? `pid ${lock.holder.pid}` : holderNote(lock)}, pidfile ${displayPath(paths.pollPidfile)}) and uses ${displayPath(file)}; ` +
      "stop the daemon with `the-loop stop`, run `the-loop upgrade-config --move-poll-state` again, then `the-loop start`. Nothing was changed.",
    EXIT_FAILURE,
    "conflict",
  );
}

function offerLine(offer: UpgradeOffer): string {
  const from = offer.action === "move-poll-state" ? displayPath(offer.from) : offer.from;
  const to = offer.action === "move-poll-state" ? displayPath(offer.to) : offer.to;
  if (offer.flag === null) return `${from} → ${to}: ${offer.why}.`;
  return `${from} → ${to}: ${offer.why}. To do it: stop the daemon (\`the-loop stop\`), then run \`the-loop upgrade-config ${offer.flag}\`.`;
}

function printReport(
  report: UpgradeConfigReport,
  context: {
    readonly shown: string;
    readonly insertions: readonly ConfigInsertion[];
    readonly move: { from: string; to: string } | undefined;
    readonly askedToMove: boolean;
  },
): void {
  const { dryRun } = report;
  const section = (title: string): void => stdout.line(`\n${stdout.paint("bold", title)}`);
  if (report.added.length === 0) {
    stdout.line(`${context.shown} is up to date: state and routing.control are already there; nothing to add.`);
  } else {
    stdout.line(dryRun ? `would upgrade ${context.shown} (dry run: nothing is written)` : `upgraded ${context.shown}`);
    if (dryRun) {
      for (const insertion of context.insertions) {
        stdout.line(stdout.paint("cyan", `@@ after line ${insertion.afterLine} @@`));
        for (const line of insertion.text.replace(/\r?\n$/, "").split(/\r?\n/)) stdout.line(stdout.paint("green", `+${line}`));
      }
    }
    section(
      dryRun ? "would add (each with its default, so the config means what it meant):" : "added (each with its default, so the config means what it meant):",
    );
    for (const key of report.added) stdout.line(`  ${key}`);
  }
  if (report.needsDecision.length > 0) {
    section("needs your decision:");
    for (const decision of report.needsDecision) stdout.line(`  ${decision.key}: ${decision.why}`);
  }
  if (context.move) {
    const what = `${displayPath(context.move.from)} → ${displayPath(context.move.to)}`;
    stdout.line(`\n${dryRun ? "would move the poll state" : "moved the poll state"}: ${what}`);
  } else if (context.askedToMove) {
    stdout.line("\n--move-poll-state: nothing to move (the poller does not read a poll-state file from before state.root)");
  }
  if (report.offers.length > 0) {
    section("offered, not done:");
    for (const offer of report.offers) stdout.line(`  ${offerLine(offer)}`);
  }
}
