/**
 * The event log's table and its announcements (migration 4 of the list in migrations.ts, which
 * imports it: this module imports nothing, so the list and the table's code import it without a
 * cycle). A migration, once landed, is never edited.
 */

export const EVENTS_TABLE = "the_loop_events";
/** The channel an insert's newest id is announced on. */
export const EVENTS_CHANNEL = "the_loop_events";

export const EVENTS_MIGRATION = {
  version: 4,
  name: "the event log, its appends announced",
  sql: `
    CREATE TABLE ${EVENTS_TABLE} (
      id bigserial PRIMARY KEY,
      ts timestamptz NOT NULL,
      host text NOT NULL,
      source text NOT NULL,
      event text NOT NULL,
      level text NOT NULL,
      -- The work items the event names (work_item and work_items), in lower case.
      items text[] NOT NULL DEFAULT '{}',
      body json NOT NULL,
      -- A line copied from a file log by \`state migrate\`: its key (a hash of the line and its
      -- occurrence), so a second copy adds nothing. Null for an event recorded here.
      imported text UNIQUE
    );
    CREATE INDEX ${EVENTS_TABLE}_ts ON ${EVENTS_TABLE} (ts);
    CREATE INDEX ${EVENTS_TABLE}_items ON ${EVENTS_TABLE} USING gin (items);
    CREATE FUNCTION the_loop_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE newest bigint;
    BEGIN
      SELECT max(id) INTO newest FROM appended;
      IF newest IS NOT NULL THEN
        PERFORM pg_notify('${EVENTS_CHANNEL}', newest::text);
      END IF;
      RETURN NULL;
    END
    $$;
    CREATE TRIGGER the_loop_events_appended AFTER INSERT ON ${EVENTS_TABLE}
      REFERENCING NEW TABLE AS appended FOR EACH STATEMENT EXECUTE FUNCTION the_loop_events_notify();
  `,
} as const;
