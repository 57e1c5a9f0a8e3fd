import { ExitError } from "../../errors.js";
import type { ItemState } from "../../trackers/index.js";
import type { GlobalOptions } from "../context.js";

export interface ItemActOptions {
  readonly as?: string;
  readonly json: boolean;
}
export interface ItemNewOptions extends ItemActOptions {
  readonly body?: string;
  readonly label: string[];
  readonly project?: string;
}
export interface ItemLabelOptions extends ItemActOptions {
  readonly add: string[];
  readonly remove: string[];
}
export interface ItemListOptions {
  readonly state: ItemState | "all";
  readonly label: string[];
  readonly project?: string;
  readonly json: boolean;
}
export interface ItemShowOptions {
  readonly json: boolean;
}

const pending = (): never => {
  throw new ExitError("the item commands are being built");
};

export async function runItemNew(_g: GlobalOptions, _title: string, _o: ItemNewOptions): Promise<void> {
  pending();
}
export async function runItemComment(_g: GlobalOptions, _ref: string, _text: string, _o: ItemActOptions): Promise<void> {
  pending();
}
export async function runItemLabel(_g: GlobalOptions, _ref: string, _o: ItemLabelOptions): Promise<void> {
  pending();
}
export async function runItemSetState(_g: GlobalOptions, _ref: string, _state: ItemState, _o: ItemActOptions): Promise<void> {
  pending();
}
export async function runItemList(_g: GlobalOptions, _o: ItemListOptions): Promise<void> {
  pending();
}
export async function runItemShow(_g: GlobalOptions, _ref: string, _o: ItemShowOptions): Promise<void> {
  pending();
}
