/**
 * What a person has put into the form on screen, read back from the page: the values typed or
 * chosen, and the field with the focus and its caret, so a redraw of the form can give them back.
 */
import type { StateValues } from "./blockkit.js";

/** The focused field by its action_id, with its selection (`start` = `end`: the caret). */
export interface FocusedField {
  actionId: string;
  start: number | null;
  end: number | null;
  direction: "forward" | "backward" | "none" | null;
}

/** The form's values: by action_id (as submitted) and as Slack's `view.state.values`. */
export function modalValues(form: HTMLFormElement): {
  entries: Record<string, string>;
  state: StateValues;
} {
  const entries: Record<string, string> = {};
  const values: Record<
    string,
    Record<string, { value?: string; selected_option?: { value: string } }>
  > = {};
  for (const field of form.querySelectorAll<
    HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement
  >("[data-action-id]")) {
    const actionId = field.dataset.actionId;
    const blockId = field.dataset.blockId;
    if (actionId === undefined || blockId === undefined) continue;
    entries[actionId] = field.value;
    (values[blockId] ??= {})[actionId] =
      field instanceof HTMLSelectElement
        ? { selected_option: { value: field.value } }
        : { value: field.value };
  }
  return { entries, state: values };
}

/** The field of `form` that has the focus, with its caret or selection. */
export function focusedField(form: HTMLFormElement): FocusedField | undefined {
  const field = document.activeElement;
  if (!(field instanceof HTMLElement) || !form.contains(field)) return undefined;
  const actionId = field.dataset.actionId;
  if (actionId === undefined) return undefined;
  const text = field instanceof HTMLInputElement || field instanceof HTMLTextAreaElement;
  // Number and e-mail inputs have no selection: reading it throws.
  let start: number | null = null;
  let end: number | null = null;
  let direction: "forward" | "backward" | "none" | null = null;
  if (text) {
    try {
      start = field.selectionStart;
      end = field.selectionEnd;
      direction = field.selectionDirection;
    } catch {
      // No selection to keep.
    }
  }
  return { actionId, start, end, direction };
}

/** Gives the focus and the caret back to the field of `root` that had them before a redraw. */
export function refocus(root: HTMLElement, focused: FocusedField): void {
  const field = [...root.querySelectorAll<HTMLElement>("[data-action-id]")].find(
    (f) => f.dataset.actionId === focused.actionId,
  );
  if (field === undefined) return;
  field.focus({ preventScroll: true });
  if (
    (field instanceof HTMLInputElement || field instanceof HTMLTextAreaElement) &&
    focused.start !== null &&
    focused.end !== null
  ) {
    try {
      field.setSelectionRange(focused.start, focused.end, focused.direction ?? undefined);
    } catch {
      // A field that changed kind has no caret to restore.
    }
  }
}
