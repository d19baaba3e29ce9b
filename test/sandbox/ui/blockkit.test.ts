import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseAnsibleOutput } from "../../../src/ansible/recap.js";
import { CREATE_FIELDS, PLAN_APPROVE, PLAN_REJECT, UNLOCK_CONFIRM } from "../../../src/ids.js";
import {
  EMOJI,
  escapeHtml,
  formatSlackDate,
  renderBlock,
  renderBlocks,
  renderConfirm,
  renderConversation,
  renderMessage,
  renderModal,
  renderMrkdwn,
  renderPlainText,
  renderText,
} from "../../../sandbox/ui/blockkit.js";
import { parsePlanText, type PlanResource } from "../../../src/terraform/plan-text.js";
import { capacityMessage } from "../../../src/views/capacity.js";
import { createModal, FORM_DEFAULTS } from "../../../src/views/create-modal.js";
import { helpMessage } from "../../../src/views/help.js";
import { planMessage, type PlanReview } from "../../../src/views/plan-message.js";
import { recapText } from "../../../src/views/recap.js";
import { requestMessage } from "../../../src/views/request-message.js";
import { unlockPrompt } from "../../../src/views/unlock.js";
import { readFixture } from "../../support/fixtures.js";
import { planSummary, sampleRequest, SAMPLE_SPEC } from "../../support/requests.js";

const PEOPLE: Record<string, string> = { U0REQ: "alice", U0APPROVER: "bob", U0BOT: "vmbot" };
const options = { userName: (id: string) => PEOPLE[id] };

// --- reading the HTML back ----------------------------------------------------------------------

const ENTITIES: Record<string, string> = {
  "&amp;": "&",
  "&lt;": "<",
  "&gt;": ">",
  "&quot;": '"',
  "&#39;": "'",
};
const decodeHtml = (html: string) => html.replace(/&(amp|lt|gt|quot|#39);/g, (e) => ENTITIES[e]!);

/** What a person reads: the text without tags, entities resolved, line breaks as newlines. */
const visible = (html: string) => decodeHtml(html.replace(/<br>/g, "\n").replace(/<[^>]*>/g, ""));

/** The opening tag of the first element carrying `attribute="value"`. */
function tagWith(html: string, attribute: string, value: string): string {
  const quoted = escapeHtml(value).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const tag = new RegExp(`<[a-z]+[^>]* ${attribute}="${quoted}"[^>]*>`).exec(html);
  expect(tag, `an element with ${attribute}="${value}"`).not.toBeNull();
  return tag![0];
}

/** An attribute's value in an opening tag, HTML entities resolved. */
function attribute(tag: string, name: string): string | undefined {
  const match = new RegExp(` ${name}="([^"]*)"`).exec(tag);
  return match === null ? undefined : decodeHtml(match[1]!);
}

/** The HTML of the block with this block_id, up to the next block. */
function blockHtml(html: string, blockId: string): string {
  const start = html.indexOf(`data-block-id="${blockId}"`);
  expect(start, `block ${blockId}`).toBeGreaterThan(-1);
  const next = html.indexOf('<div class="bk-block', start);
  return html.slice(start, next === -1 ? undefined : next);
}

const TAGS = new Set([
  "a",
  "article",
  "br",
  "button",
  "code",
  "del",
  "div",
  "em",
  "footer",
  "form",
  "h2",
  "header",
  "hr",
  "input",
  "label",
  "optgroup",
  "option",
  "pre",
  "select",
  "span",
  "strong",
  "textarea",
  "time",
]);
const ATTRIBUTES =
  /^(class|id|href|target|rel|type|for|role|title|datetime|value|placeholder|maxlength|minlength|min|max|step|inputmode|rows|selected|disabled|required|label|aria-[a-z]+|data-[a-z-]+)$/;

/**
 * Fails unless every tag in `html` is one the renderer writes, with only its attributes (no
 * event handlers, no `style`, no `src`), every attribute value quoted and free of markup, every
 * link http(s) or mailto, and every `&` an entity: text from the JSON cannot have become markup.
 */
function expectSafeMarkup(html: string): void {
  const tag = /<(\/?)([a-z0-9]+)((?:\s+[a-z-]+(?:="[^"<>]*")?)*)\s*>/g;
  for (const [, , name, attrs] of html.matchAll(tag)) {
    expect(TAGS, `tag <${name}>`).toContain(name);
    for (const [, attr, value] of attrs!.matchAll(/\s+([a-z-]+)(?:="([^"]*)")?/g)) {
      expect(attr, `attribute ${attr} on <${name}>`).toMatch(ATTRIBUTES);
      if (attr === "href") expect(decodeHtml(value!)).toMatch(/^(https?:\/\/|mailto:|\/(?!\/))/);
    }
  }
  const text = html.replace(tag, "");
  expect(text, "a < or > outside the renderer's tags").not.toMatch(/[<>]/);
  expect(text.replace(/&(amp|lt|gt|quot|#39);/g, ""), "an & that is not an entity").not.toContain(
    "&",
  );
}

// --- the bot's views ----------------------------------------------------------------------------

const modalOptions = {
  nodes: [
    { value: "pve", label: "pve — 6.0 of 8 cores, 20.0 GiB free" },
    { value: "pve2", label: "pve2 — 2.0 of 4 cores, 3.5 GiB free" },
  ],
  nodeHint: "Online nodes from Proxmox, with their free resources.",
  templates: [
    { name: "ubuntu", id: 9000 },
    { name: "debian", id: 9001 },
  ],
  defaults: { gateway: "192.168.1.1", dns: "192.168.1.1", ...FORM_DEFAULTS },
  name: "web-01",
  privateMetadata: JSON.stringify({ channel: "C0CHAN" }),
};

const replace: PlanResource = {
  address: "proxmox_virtual_environment_vm.vm",
  action: "replace",
  replaceOrder: "delete-first",
};

function review(resources: PlanResource[]): PlanReview {
  return {
    plan: planSummary(resources),
    nodes: [
      { name: "pve", online: true, cpuPercent: 12.4, memoryUsedGb: 3.1, memoryTotalGb: 16 },
      { name: "pve2", online: false },
    ],
    planJobUrl: "https://gitlab.example.com/infra/vms/-/jobs/5002",
    planFile: "uploaded",
  };
}

const awaiting = sampleRequest({
  status: "awaiting_approval",
  messageTs: "1796205600.000100",
  pipelineId: 1001,
  pipelineUrl: "https://gitlab.example.com/infra/vms/-/pipelines/1001",
});

const posted = (message: { text: string; blocks: unknown[] }, ts = "1796205600.000100") => ({
  ...message,
  ts,
  user: "U0BOT",
  bot_id: "B0BOT",
});

describe("the create form", () => {
  const html = renderModal(createModal(modalOptions), options);

  it("shows the title, the Create and Cancel buttons, and every field's label", () => {
    expectSafeMarkup(html);
    expect(html).toContain('<h2 class="bk-modal-title">New VM</h2>');
    expect(html).toContain(
      '<button type="submit" class="bk-button bk-button-primary">Create</button>',
    );
    expect(html).toContain(
      '<button type="button" class="bk-button" data-modal-close>Cancel</button>',
    );
    expect(tagWith(html, "class", "bk-modal")).toContain('data-callback-id="vm_create_modal"');
    const labels = [...html.matchAll(/<label[^>]*>(.*?)<\/label>/g)].map(([, label]) =>
      visible(label!),
    );
    expect(labels).toEqual([
      "Name",
      "Proxmox node",
      "Template",
      "CPU cores",
      "Memory (MiB)",
      "Disk (GiB)",
      "IP address / prefix",
      "Gateway",
      "DNS server",
      "VM ID (optional)",
      "VLAN (optional)",
    ]);
  });

  it("fills the text inputs with their initial values, placeholders and length limits", () => {
    const name = tagWith(html, "data-action-id", CREATE_FIELDS.name);
    expect(name).toMatch(/^<input type="text"/);
    expect(attribute(name, "data-block-id")).toBe(CREATE_FIELDS.name);
    expect(attribute(name, "data-element")).toBe("plain_text_input");
    expect(attribute(name, "value")).toBe("web-01");
    expect(attribute(name, "placeholder")).toBe("web-01");
    // More than a hostname's 63, so that a longer name is refused on the field, not cut.
    expect(attribute(name, "maxlength")).toBe("255");
    expect(name).toContain(" required");
    const ip = tagWith(html, "data-action-id", CREATE_FIELDS.ip);
    expect(attribute(ip, "value")).toBe("");
    expect(attribute(ip, "placeholder")).toBe("192.168.1.50/24");
    expect(attribute(ip, "maxlength")).toBe("18");
    expect(attribute(tagWith(html, "data-action-id", CREATE_FIELDS.gateway), "value")).toBe(
      "192.168.1.1",
    );
  });

  it("makes whole-number inputs of cores, memory and disk, with their range", () => {
    const memory = tagWith(html, "data-action-id", CREATE_FIELDS.memory);
    expect(memory).toMatch(/^<input type="number"/);
    expect(attribute(memory, "data-element")).toBe("number_input");
    expect(attribute(memory, "value")).toBe("2048");
    expect(attribute(memory, "min")).toBe("512");
    expect(attribute(memory, "step")).toBe("1");
    expect(attribute(tagWith(html, "data-action-id", CREATE_FIELDS.cores), "value")).toBe("2");
  });

  it("lists the node and template options with the initial one selected", () => {
    const node = blockHtml(html, CREATE_FIELDS.node);
    const options = [...node.matchAll(/<option([^>]*)>(.*?)<\/option>/g)].map(
      ([, attrs, text]) => ({
        value: attribute(attrs!, "value"),
        selected: attrs!.includes(" selected"),
        text: visible(text!),
      }),
    );
    expect(options).toEqual([
      { value: "pve", selected: true, text: "pve — 6.0 of 8 cores, 20.0 GiB free" },
      { value: "pve2", selected: false, text: "pve2 — 2.0 of 4 cores, 3.5 GiB free" },
    ]);
    // The option as Slack would send it back in view.state.values.
    const pve = tagWith(node, "value", "pve");
    expect(JSON.parse(attribute(pve, "data-option")!)).toEqual({
      text: { type: "plain_text", text: "pve — 6.0 of 8 cores, 20.0 GiB free", emoji: true },
      value: "pve",
    });
    expect(blockHtml(html, CREATE_FIELDS.template)).toContain('<option value="9000" selected');
  });

  it("shows the hints, and marks only VM ID and VLAN optional", () => {
    expect(visible(blockHtml(html, CREATE_FIELDS.name))).toContain(
      "Hostname and Proxmox name: a-z, 0-9 and -, up to 63 characters.",
    );
    expect(visible(blockHtml(html, CREATE_FIELDS.node))).toContain(
      "Online nodes from Proxmox, with their free resources.",
    );
    expect(visible(blockHtml(html, CREATE_FIELDS.gateway))).toContain("Inside the VM's subnet.");
    const optional = Object.values(CREATE_FIELDS).filter(
      (id) => !tagWith(html, "data-action-id", id).includes(" required"),
    );
    expect(optional).toEqual([CREATE_FIELDS.vmId, CREATE_FIELDS.vlan]);
  });
});

describe("inline errors", () => {
  const view = createModal(modalOptions);

  it("shows the bot's error under its own field and nowhere else", () => {
    const html = renderModal(view, {
      errors: { [CREATE_FIELDS.ip]: "192.168.1.500/24 is not an IPv4 address." },
    });
    expectSafeMarkup(html);
    const ip = blockHtml(html, CREATE_FIELDS.ip);
    expect(ip).toMatch(/^data-block-id="vm_ip"/);
    expect(html.match(/class="bk-error"/g)).toHaveLength(1);
    // After the input, before its hint, inside the field's block.
    expect(ip).toMatch(
      /<input[^>]*aria-invalid="true"[^>]*><div class="bk-error" role="alert">192\.168\.1\.500\/24 is not an IPv4 address\.<\/div><div class="bk-hint">/,
    );
    expect(tagWith(html, "class", "bk-block bk-input bk-invalid")).toContain(
      'data-block-id="vm_ip"',
    );
    expect(blockHtml(html, CREATE_FIELDS.gateway)).not.toContain("bk-error");
  });

  it("keeps what was typed when the form is shown again with its errors", () => {
    const html = renderModal(view, {
      errors: { [CREATE_FIELDS.node]: "pve2 is not online in Proxmox now: choose another node." },
      values: {
        [CREATE_FIELDS.ip]: {
          [CREATE_FIELDS.ip]: { type: "plain_text_input", value: "10.0.0.5/8" },
        },
        [CREATE_FIELDS.node]: {
          [CREATE_FIELDS.node]: { type: "static_select", selected_option: { value: "pve2" } },
        },
      },
    });
    expect(attribute(tagWith(html, "data-action-id", CREATE_FIELDS.ip), "value")).toBe(
      "10.0.0.5/8",
    );
    const node = blockHtml(html, CREATE_FIELDS.node);
    expect(node).toContain('<option value="pve2" selected');
    expect(node).not.toContain('<option value="pve" selected');
    expect(visible(node)).toContain("pve2 is not online in Proxmox now: choose another node.");
  });

  it("escapes an error's text", () => {
    const html = renderModal(view, {
      errors: { [CREATE_FIELDS.name]: '<img src=x onerror="alert(1)">' },
    });
    expectSafeMarkup(html);
    expect(visible(blockHtml(html, CREATE_FIELDS.name))).toContain(
      '<img src=x onerror="alert(1)">',
    );
  });

  it("lists an error for a block the view does not have at the top, instead of losing it", () => {
    const html = renderModal(view, { errors: { vm_nmae: "Required." } });
    expect(visible(html)).toContain(
      "Error for vm_nmae, which is not an input of this view: Required.",
    );
    expect(html.indexOf("vm_nmae")).toBeLessThan(html.indexOf('data-block-id="vm_name"'));
  });
});

describe("the request message", () => {
  const html = renderMessage(posted(requestMessage(sampleRequest())), options);

  it("shows the header, who asked and when, and the inputs as labelled fields", () => {
    expectSafeMarkup(html);
    expect(html).toContain('<div class="bk-block bk-header">VM web-01 — Queued</div>');
    const text = visible(html);
    expect(text).toContain("Requested by @alice · Dec 2, 2026 10:00 UTC · vm-abc-1234");
    expect(html).toContain('<span class="bk-mention" data-user-id="U0REQ">@alice</span>');
    expect(html).toContain("<strong>Node</strong><br>pve</div>");
    expect(html).toContain("<strong>Address</strong><br>192.168.1.50/24 via 192.168.1.1</div>");
    expect(html).toContain("<strong>VLAN</strong><br>untagged</div>");
    expect(html.match(/class="bk-field"/g)).toHaveLength(9);
    expect(text).toContain("\u23f3 Starting the GitLab pipeline…");
  });

  it("shows the author, the app badge and the time; blocks replace the text fallback", () => {
    expect(html).toMatch(
      /<span class="bk-author">vmbot<\/span><span class="bk-badge">APP<\/span><time class="bk-time" datetime="2026-12-02T10:00:00.000Z">10:00 UTC<\/time>/,
    );
    // The fallback ("VM web-01 — Queued") is for notifications: shown once, by the header.
    expect(visible(html).match(/VM web-01 — Queued/g)).toHaveLength(1);
  });

  it("shows the text when a message has no blocks, and marks an edited one", () => {
    const plain = renderMessage(
      { ts: "1796205600.000200", user: "U0BOT", text: "*Done* — <@U0REQ>", edited: { ts: "1" } },
      options,
    );
    expect(plain).toContain(
      '<div class="bk-block bk-text"><strong>Done</strong> — <span class="bk-mention"',
    );
    expect(plain).toContain('<span class="bk-edited">(edited)</span>');
  });
});

describe("the plan message", () => {
  it("shows the counts and resources, and Approve and Reject with their IDs and value", () => {
    const html = renderMessage(
      posted(
        planMessage(
          awaiting,
          review([{ address: "proxmox_virtual_environment_vm.vm", action: "create" }]),
        ),
      ),
      options,
    );
    expectSafeMarkup(html);
    expect(html).toContain(
      "<strong>Plan:</strong> <strong>1</strong> to add, <strong>0</strong> to change, <strong>0</strong> to destroy",
    );
    expect(html).toContain(
      '<code class="bk-code">+</code> <code class="bk-code">proxmox_virtual_environment_vm.vm</code> create',
    );
    expect(visible(html)).toContain("pve (chosen): CPU 12%, memory 3.1 / 16.0 GiB");
    expect(html).toContain(
      '<a class="bk-link" href="https://gitlab.example.com/infra/vms/-/pipelines/1001" target="_blank" rel="noopener noreferrer">Pipeline #1001</a>',
    );
    const approve = tagWith(html, "data-action-id", PLAN_APPROVE);
    expect(approve).toMatch(/^<button type="button" class="bk-button bk-button-primary"/);
    expect(attribute(approve, "data-block-id")).toBe("plan_actions");
    expect(attribute(approve, "data-value")).toBe("vm-abc-1234");
    expect(attribute(approve, "data-confirm")).toBeUndefined();
    expect(html).toContain(`${approve}Approve</button>`);
    const reject = tagWith(html, "data-action-id", PLAN_REJECT);
    expect(reject).toContain('class="bk-button bk-button-danger"');
    expect(html).toContain(`${reject}Reject</button>`);
  });

  it("warns about a replace and puts Approve behind the confirmation the bot wrote", () => {
    const message = planMessage(awaiting, review([replace]));
    const html = renderMessage(posted(message), options);
    expectSafeMarkup(html);
    expect(html).toContain(
      '<span class="bk-emoji" title=":rotating_light:">\u{1f6a8}</span> <strong>This plan destroys a resource of VM web-01.</strong>',
    );
    const approve = tagWith(html, "data-action-id", PLAN_APPROVE);
    expect(html).toContain(`${approve}Approve (destroys)</button>`);
    const sent = (
      message.blocks.find((block) => block.type === "actions") as {
        elements: { confirm?: unknown }[];
      }
    ).elements[0]!.confirm;
    const confirm: unknown = JSON.parse(attribute(approve, "data-confirm")!);
    expect(confirm).toEqual(sent);

    const dialog = renderConfirm(confirm, options);
    expectSafeMarkup(dialog);
    expect(dialog).toContain('<h2 class="bk-dialog-title">Destroy resources?</h2>');
    expect(visible(dialog)).toContain(
      "Applying this plan destroys resources of VM web-01: proxmox_virtual_environment_vm.vm. This cannot be undone.",
    );
    expect(dialog).toContain(
      '<button type="button" class="bk-button bk-button-danger" data-confirm-answer="confirm">Approve and destroy</button>',
    );
    expect(dialog).toContain('data-confirm-answer="deny">Go back</button>');
  });

  it("replaces the buttons with who approved and when", () => {
    const approved = sampleRequest({
      ...awaiting,
      status: "applying",
      decision: { kind: "approved", by: "U0APPROVER", at: "2026-12-02T10:05:00.000Z" },
    });
    const html = renderMessage(posted(planMessage(approved, review([replace]))), {
      ...options,
      now: new Date("2026-12-02T18:00:00Z"),
    });
    expect(html).not.toContain("bk-button");
    expect(visible(html)).toContain("\u2705 Approved by @bob at today 10:05 UTC");
  });

  describe("from real tool output", () => {
    it("renders Terraform's delete plan, and Ansible's failed run as a thread reply with the plan file", () => {
      const plan = parsePlanText(
        readFixture("terraform-plan-text/terraform-plan-comment-basic-2-delete-plan.txt"),
      );
      const parent = posted(planMessage(awaiting, { ...review([]), plan }));
      const upload = {
        ts: "1796205601.000100",
        thread_ts: parent.ts,
        user: "U0BOT",
        text: "",
        files: [{ id: "F0PLAN", name: "web-01-plan.txt", title: "Terraform plan for web-01" }],
      };
      const recap = {
        ts: "1796205700.000100",
        thread_ts: parent.ts,
        user: "U0BOT",
        text: recapText(parseAnsibleOutput(readFixture("ansible/fail-color.txt"))),
      };
      const html = renderConversation([parent, upload, recap], {
        ...options,
        fileUrl: (id) => `/files/${id}`,
      });
      expectSafeMarkup(html);
      expect(visible(html)).toContain("This plan destroys 2 resources of VM web-01.");
      expect(html).toContain('<code class="bk-code">local_file.test3</code> is destroyed');
      const thread = html.slice(
        html.indexOf('<div class="bk-thread" data-thread-ts="1796205600.000100">'),
      );
      expect(thread.match(/<article class="bk-message bk-reply"/g)).toHaveLength(2);
      expect(thread).toContain(
        '<a class="bk-link" href="/files/F0PLAN" target="_blank" rel="noopener noreferrer"><span class="bk-file-title">Terraform plan for web-01</span></a><span class="bk-file-name">web-01-plan.txt</span>',
      );
      expect(thread).toContain(
        '<code class="bk-code">test-vm-01</code> ok=1 changed=1 unreachable=0 failed=1',
      );
      expect(thread).toContain(
        "• <strong>test-vm-01</strong> failed in <em>Start qemu-guest-agent</em>: non-zero return code",
      );
    });
  });
});

describe("the other answers", () => {
  it("draws /vm capacity's gauges in a preformatted block, status emoji included", () => {
    const html = renderMessage(
      posted(
        capacityMessage({
          nodes: [
            {
              name: "pve",
              status: "online",
              cores: 8,
              cpu: 0.25,
              memUsed: 12 * 1024 ** 3,
              memTotal: 32 * 1024 ** 3,
            },
          ],
          source: "https://pve.lan:8006",
          at: new Date("2026-12-02T10:00:00Z"),
        }),
      ),
      { ...options, ephemeral: true },
    );
    expectSafeMarkup(html);
    expect(html).toContain('<div class="bk-block bk-header">Proxmox capacity</div>');
    expect(html).toContain(
      '<strong>pve</strong>  <span class="bk-emoji" title=":large_green_circle:">\u{1f7e2}</span> online<pre class="bk-pre">CPU     ███░░░░░░░   25% of 8 cores\nMemory  ████░░░░░░  12.0 GiB / 32.0 GiB</pre>',
    );
    expect(visible(html)).toContain("live from https://pve.lan:8006 at 10:00 UTC");
    expect(html).toContain('<div class="bk-ephemeral-note">Only visible to you</div>');
  });

  it("shows /vm unlock's Force-unlock as a danger button behind its confirmation", () => {
    const prompt = unlockPrompt(
      { name: "general", lockedAt: "2026-12-02T08:47:30Z", lockedBy: "alice" },
      new Date("2026-12-02T12:00:00Z"),
    );
    const html = renderMessage(posted(prompt), options);
    expectSafeMarkup(html);
    expect(visible(html)).toContain(
      "\u{1f512} The Terraform state general is locked by alice since Dec 2, 2026 08:47 UTC (3 h 12 min ago).",
    );
    const button = tagWith(html, "data-action-id", UNLOCK_CONFIRM);
    expect(button).toContain("bk-button-danger");
    expect(JSON.parse(attribute(button, "data-value")!)).toEqual({
      state: "general",
      lockedAt: "2026-12-02T08:47:30Z",
    });
    const dialog = renderConfirm(JSON.parse(attribute(button, "data-confirm")!), options);
    expect(visible(dialog)).toContain("Force-unlock general?");
    expect(visible(dialog)).toContain("alice's lock is 3 h 12 min old.");
    expect(visible(dialog)).toContain("Keep the lock");
  });

  it("shows /vm help's commands as code inside bold", () => {
    const html = renderBlocks(helpMessage().blocks, options);
    expect(html).toContain(
      '<strong><code class="bk-code">/vm create [name]</code></strong> — open the form for a new VM',
    );
  });
});

// --- outside text -------------------------------------------------------------------------------

const HOSTILE = [
  "<script>alert(1)</script>",
  '"><img src=x onerror=alert(1)>',
  "<!channel>",
  "Tom & Jerry",
  "<https://evil.example|click>",
  "javascript:alert(1)",
  "`code` *bold* ' \" &amp;",
];

describe("text from outside", () => {
  it.each(HOSTILE)("comes out of every view escaped and inert: %s", (hostile) => {
    const request = sampleRequest({
      ...awaiting,
      spec: { ...SAMPLE_SPEC, name: hostile, node: hostile, templateName: hostile },
      notes: [hostile],
    });
    const html = [
      renderMessage(posted(requestMessage({ ...request, status: "failed" })), options),
      renderMessage(
        posted(planMessage(request, review([{ address: hostile, action: "delete" }]))),
        options,
      ),
      renderModal(
        createModal({
          ...modalOptions,
          name: hostile,
          nodes: [{ value: hostile, label: hostile }],
          nodeHint: hostile,
          templates: [{ name: hostile, id: 9000 }],
        }),
        { ...options, errors: { [CREATE_FIELDS.name]: hostile } },
      ),
      ...unlockPrompt(
        { name: hostile, lockedAt: "2026-12-02T08:47:30Z", lockedBy: hostile },
        new Date("2026-12-02T12:00:00Z"),
      ).blocks.map((block) => renderBlock(block, options)),
    ].join("");
    expectSafeMarkup(html);
    // The header is plain_text with the raw name; the rest is mrkdwn the bot escaped.
    expect(visible(html)).toContain(`VM ${hostile} — Failed`);
    expect(html).not.toContain("bk-broadcast");
    expect(html).not.toContain(">click</a>");
    expect(html).not.toMatch(/<(script|img)/i);
  });

  it("keeps the exact text in data attributes, to be sent back as Slack would", () => {
    const hostile = HOSTILE.join(" ");
    const html = renderModal(
      createModal({ ...modalOptions, nodes: [{ value: hostile, label: "pve" }] }),
      options,
    );
    const option = JSON.parse(attribute(tagWith(html, "value", hostile), "data-option")!) as {
      value: string;
    };
    expect(option.value).toBe(hostile);
  });

  it("cannot become markup, whatever the text and however it is wrapped", () => {
    const character = fc.constantFrom(
      ..."<>&\"'`*_~:|!@#^/\\ \nahttps.;=()[]{}".split(""),
      "&lt;",
      "&gt;",
      "&amp;",
      "<!here>",
      "<@U1>",
      "<https://x|y>",
      "<javascript:x|y>",
      ":x:",
      "```",
    );
    const text = fc.oneof(
      fc.string({ maxLength: 60 }),
      fc.array(character, { maxLength: 40 }).map((parts) => parts.join("")),
    );
    fc.assert(
      fc.property(text, (raw) => {
        expectSafeMarkup(renderMrkdwn(raw, options));
        expectSafeMarkup(renderPlainText(raw));
        expectSafeMarkup(
          renderBlocks(
            [
              { type: "header", text: { type: "plain_text", text: raw } },
              { type: raw },
              { type: "section", block_id: raw, fields: [{ type: "mrkdwn", text: raw }] },
              {
                type: "actions",
                block_id: raw,
                elements: [
                  {
                    type: "button",
                    action_id: raw,
                    value: raw,
                    url: raw,
                    text: { type: "plain_text", text: raw },
                    confirm: { title: { type: "plain_text", text: raw } },
                  },
                ],
              },
              {
                type: "input",
                block_id: raw,
                label: { type: "plain_text", text: raw },
                element: {
                  type: "static_select",
                  action_id: raw,
                  options: [{ text: { type: "plain_text", text: raw }, value: raw }],
                },
              },
            ],
            { errors: { [raw]: raw } },
          ),
        );
      }),
      { numRuns: 300 },
    );
  });
});

// --- mrkdwn -------------------------------------------------------------------------------------

describe("mrkdwn", () => {
  it("formats bold, italic, strike, code and preformatted text", () => {
    expect(renderMrkdwn("*bold* _italic_ ~strike~ `code`")).toBe(
      '<strong>bold</strong> <em>italic</em> <del>strike</del> <code class="bk-code">code</code>',
    );
    expect(renderMrkdwn("Run:\n```terraform plan\n  -out=tfplan```\ndone")).toBe(
      'Run:<pre class="bk-pre">terraform plan\n  -out=tfplan</pre>done',
    );
    expect(renderMrkdwn("*bold _and italic_*")).toBe("<strong>bold <em>and italic</em></strong>");
    expect(renderMrkdwn("line one\nline two")).toBe("line one<br>line two");
  });

  it("leaves markers inside words, around spaces and inside code alone, as Slack does", () => {
    expect(renderMrkdwn("proxmox_virtual_environment_vm 2*3*4 * not * _ x_")).toBe(
      "proxmox_virtual_environment_vm 2*3*4 * not * _ x_",
    );
    expect(renderMrkdwn("`*not bold* _nor italic_`")).toBe(
      '<code class="bk-code">*not bold* _nor italic_</code>',
    );
    expect(renderMrkdwn("*unclosed and `code`")).toBe(
      '*unclosed and <code class="bk-code">code</code>',
    );
    expect(renderMrkdwn("*not\nacross lines*")).toBe("*not<br>across lines*");
  });

  it("links <url|label> and <url>, and only to http(s) and mailto", () => {
    expect(renderMrkdwn("<https://gitlab.example.com/p?a=1&amp;b=2|pipeline #42>")).toBe(
      '<a class="bk-link" href="https://gitlab.example.com/p?a=1&amp;b=2" target="_blank" rel="noopener noreferrer">pipeline #42</a>',
    );
    expect(renderMrkdwn("<https://gitlab.example.com>")).toBe(
      '<a class="bk-link" href="https://gitlab.example.com" target="_blank" rel="noopener noreferrer">https://gitlab.example.com</a>',
    );
    expect(renderMrkdwn("<mailto:ops@example.com|ops>")).toContain('href="mailto:ops@example.com"');
    expect(renderMrkdwn("<javascript:alert(1)|click>")).toBe("click");
    expect(renderMrkdwn("*<https://a.example|bold link>*")).toBe(
      '<strong><a class="bk-link" href="https://a.example" target="_blank" rel="noopener noreferrer">bold link</a></strong>',
    );
  });

  it("links bare URLs unless the text is verbatim", () => {
    expect(renderMrkdwn("see https://pve.lan:8006/#v1. Then")).toBe(
      'see <a class="bk-link" href="https://pve.lan:8006/#v1" target="_blank" rel="noopener noreferrer">https://pve.lan:8006/#v1</a>. Then',
    );
    expect(renderText({ type: "mrkdwn", text: "see https://pve.lan:8006", verbatim: true })).toBe(
      "see https://pve.lan:8006",
    );
  });

  it("shows user mentions by name, channels, broadcasts and user groups", () => {
    expect(renderMrkdwn("<@U0REQ> and <@U0NOBODY>", options)).toBe(
      '<span class="bk-mention" data-user-id="U0REQ">@alice</span> and <span class="bk-mention" data-user-id="U0NOBODY">@U0NOBODY</span>',
    );
    expect(
      renderMrkdwn("<#C0CHAN> <#C0OPS|ops>", {
        channelName: (id) => (id === "C0CHAN" ? "vm-requests" : undefined),
      }),
    ).toBe(
      '<span class="bk-mention" data-channel-id="C0CHAN">#vm-requests</span> <span class="bk-mention" data-channel-id="C0OPS">#ops</span>',
    );
    expect(renderMrkdwn("<!here> <!channel> <!everyone>")).toBe(
      '<span class="bk-mention bk-broadcast">@here</span> <span class="bk-mention bk-broadcast">@channel</span> <span class="bk-mention bk-broadcast">@everyone</span>',
    );
    expect(renderMrkdwn("<!subteam^S0OPS|@platform>")).toBe(
      '<span class="bk-mention" data-usergroup-id="S0OPS">@platform</span>',
    );
  });

  it("shows <!date> in UTC with its fallback as the title, and the fallback when unreadable", () => {
    expect(
      renderMrkdwn("<!date^1796205600^{date_short_pretty} {time}|2026-12-02T10:00:00.000Z>"),
    ).toBe(
      '<time class="bk-date" datetime="2026-12-02T10:00:00.000Z" title="2026-12-02T10:00:00.000Z">Dec 2, 2026 10:00 UTC</time>',
    );
    expect(renderMrkdwn("<!date^1796205600^{date_num}^https://x.example|then>")).toContain(
      '<a class="bk-link" href="https://x.example"',
    );
    expect(renderMrkdwn("<!date^soon^{time}|2026-12-02 &amp; later>")).toBe(
      "2026-12-02 &amp; later",
    );
  });

  it("fills in every date token Slack documents", () => {
    const at = Date.UTC(2026, 11, 2, 10, 0, 5) / 1000;
    expect(
      formatSlackDate(
        at,
        "{date_num} | {date} | {date_short} | {date_long} | {time} | {time_secs}",
      ),
    ).toBe(
      "2026-12-02 | December 2nd, 2026 | Dec 2, 2026 | Wednesday, December 2nd, 2026 | 10:00 UTC | 10:00:05 UTC",
    );
    expect(formatSlackDate(at, "{date_pretty}")).toBe("December 2nd, 2026");
    const now = new Date("2026-12-03T08:00:00Z");
    expect(formatSlackDate(at, "{date_pretty} / {date_long_pretty} / {ago}", now)).toBe(
      "yesterday / yesterday / 21 hours ago",
    );
    expect(formatSlackDate(at, "{ago}")).toBe("Dec 2, 2026 10:00 UTC");
    expect(formatSlackDate(Date.UTC(2026, 0, 11) / 1000, "{date} {unknown}")).toBe(
      "January 11th, 2026 {unknown}",
    );
  });

  it("turns Slack's entities back into characters, still escaped as HTML", () => {
    expect(renderMrkdwn("&lt;!channel&gt; &amp; co")).toBe("&lt;!channel&gt; &amp; co");
    expect(visible(renderMrkdwn("&lt;!channel&gt; &amp; co"))).toBe("<!channel> & co");
    expect(renderMrkdwn("&lt;@U0REQ&gt;", options)).not.toContain("bk-mention");
    // Only Slack's three: anything else is shown as typed.
    expect(visible(renderMrkdwn("&quot;x&quot; &amp;lt;"))).toBe("&quot;x&quot; &lt;");
    expect(visible(renderMrkdwn("```a &lt; b &amp;&amp; c```"))).toBe("a < b && c");
  });

  it("draws the bot's emoji and shows unknown shortcodes as typed", () => {
    expect(renderMrkdwn(":white_check_mark: done :not_an_emoji:")).toBe(
      '<span class="bk-emoji" title=":white_check_mark:">\u2705</span> done :not_an_emoji:',
    );
    expect(renderPlainText(":warning: careful")).toBe("\u26a0\ufe0f careful");
    expect(renderText({ type: "plain_text", text: ":warning:", emoji: false })).toBe(":warning:");
    // A shortcode's underscores are not italics.
    expect(renderMrkdwn("_x_ :hourglass_flowing_sand: _y_")).toBe(
      '<em>x</em> <span class="bk-emoji" title=":hourglass_flowing_sand:">\u23f3</span> <em>y</em>',
    );
  });

  it("has an emoji for every shortcode the bot writes", () => {
    const dirs = ["src/views", "src/actions", "src/commands", "src/tracker"];
    const written = new Set(
      dirs.flatMap((dir) =>
        readdirSync(dir)
          .filter((file) => file.endsWith(".ts"))
          .flatMap((file) => [
            ...readFileSync(path.join(dir, file), "utf8").matchAll(/:([a-z][a-z_]*):/g),
          ])
          .map(([, name]) => name!),
      ),
    );
    expect(written.size).toBeGreaterThan(10);
    expect([...written].filter((name) => EMOJI[name] === undefined)).toEqual([]);
  });
});

// --- what is not supported ----------------------------------------------------------------------

describe("unknown types", () => {
  it("shows a labelled placeholder for a block type it does not render", () => {
    expect(renderBlock({ type: "foo" })).toBe(
      '<div class="bk-unknown">Unsupported block: foo</div>',
    );
    expect(renderBlock({ type: "image", block_id: "chart" })).toBe(
      '<div class="bk-unknown" data-block-id="chart">Unsupported block: image</div>',
    );
    expect(renderBlock("header")).toBe(
      '<div class="bk-unknown">Unsupported block: (not an object)</div>',
    );
    expect(renderBlock({ type: "<b>x</b>" })).toBe(
      '<div class="bk-unknown">Unsupported block: &lt;b&gt;x&lt;/b&gt;</div>',
    );
  });

  it("shows a placeholder for unknown elements, text objects, views and attachments", () => {
    const actions = renderBlock({
      type: "actions",
      elements: [
        { type: "overflow", action_id: "more" },
        { type: "button", text: { type: "plain_text", text: "OK" } },
      ],
    });
    expect(actions).toContain('<span class="bk-unknown">Unsupported element: overflow</span>');
    expect(actions).toContain(">OK</button>");
    expect(
      renderBlock({
        type: "input",
        label: { type: "plain_text", text: "When" },
        element: { type: "datepicker" },
      }),
    ).toContain("Unsupported element: datepicker");
    expect(
      renderBlock({
        type: "context",
        elements: [{ type: "image", image_url: "https://x", alt_text: "x" }],
      }),
    ).toContain("Unsupported element: image");
    expect(renderText({ type: "rich_text", text: "x" })).toBe(
      '<span class="bk-unknown">Unsupported text: rich_text</span>',
    );
    expect(renderModal({ type: "home", blocks: [] })).toBe(
      '<div class="bk-unknown">Unsupported view: home</div>',
    );
    expect(renderMessage({ ts: "1e300", text: "x" })).not.toContain("<time");
    expect(renderMessage({ ts: "1", text: "x", attachments: [{ color: "good" }] })).toContain(
      "Unsupported content: 1 legacy attachment",
    );
  });
});
