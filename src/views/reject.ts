import type { types } from "@slack/bolt";
import { REJECT_REASON, PLAN_REJECT_MODAL } from "../ids.js";
import { truncate } from "../slack/mrkdwn.js";
import type { RequestRecord } from "../store/store.js";

/** How long a rejection's reason may be. */
export const REASON_MAX = 500;

/** What Reject's form asks, by what the request does. */
const WORDS: Record<RequestRecord["kind"], { title: string; text: (vm: string) => string }> = {
  create: {
    title: "Reject this plan?",
    text: (vm) =>
      `Reject the plan for ${vm}? Its pipeline is canceled in GitLab and nothing is built.`,
  },
  destroy: {
    title: "Reject this destroy?",
    text: (vm) => `Reject destroying ${vm}? Its pipeline is canceled in GitLab and the VM stays.`,
  },
  extend: {
    title: "Reject longer lease?",
    text: (vm) => `Reject the longer lease for ${vm}? Its lease stays as it was.`,
  },
};

/**
 * Reject's form: it asks why (optional) before the plan is rejected. Its private_metadata is the
 * request ID only; the request is read again when it comes back.
 */
export function rejectModal(request: RequestRecord): types.ModalView {
  return {
    type: "modal",
    callback_id: PLAN_REJECT_MODAL,
    private_metadata: JSON.stringify({ requestId: request.id }),
    title: { type: "plain_text", text: WORDS[request.kind].title },
    submit: { type: "plain_text", text: "Reject" },
    close: { type: "plain_text", text: "Cancel" },
    blocks: [
      {
        type: "section",
        text: {
          type: "plain_text",
          text: truncate(WORDS[request.kind].text(request.spec.name), 3000),
        },
      },
      {
        type: "input",
        block_id: REJECT_REASON,
        optional: true,
        label: { type: "plain_text", text: "Why (optional)" },
        hint: {
          type: "plain_text",
          text: "Shown on the request message and to whoever asked for it.",
        },
        element: {
          type: "plain_text_input",
          action_id: REJECT_REASON,
          multiline: true,
          max_length: REASON_MAX,
        },
      },
    ],
  };
}

/** To the approver: Slack did not open Reject's form. */
export function rejectFormNotOpenedWords(vmName: string): string {
  return `Slack did not open the form to reject ${vmName}, so nothing changed: press Reject again.`;
}

/** To the approver: the rejection stands, but closing the request left `problem`. */
export function rejectedButWords(problem: string): string {
  return `The request is rejected, but ${problem}`;
}
