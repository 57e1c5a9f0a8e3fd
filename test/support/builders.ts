import { DEFAULT_AUTO_EXECUTE_LABEL } from "../../src/config/schema.js";

/**
 * The values and shapes tests build again and again, built once. A test that needs a variant
 * spreads over what these return, so the shape of a record or an event lives in one place.
 */

/** The label that arms a work item (routing.autoExecuteLabel's default). */
export const ARM = DEFAULT_AUTO_EXECUTE_LABEL;
