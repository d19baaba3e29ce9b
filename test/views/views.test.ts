import { describe, expect, it } from "vitest";
import { sampleRequest } from "../support/requests.js";
import { CREATE_FIELDS, CREATE_MODAL } from "../../src/ids.js";
import { createModal, FORM_DEFAULTS } from "../../src/views/create-modal.js";
import { helpMessage } from "../../src/views/help.js";
import { requestMessage } from "../../src/views/request-message.js";

const request = sampleRequest();

const texts = (blocks: unknown) => JSON.stringify(blocks);

describe("createModal", () => {
  const view = createModal({
    nodes: ["pve", "pve2"],
    templates: [{ name: "ubuntu", id: 9000 }],
    defaults: { gateway: "10.0.0.1", dns: "10.0.0.53", ...FORM_DEFAULTS },
    name: "web-01",
    privateMetadata: '{"channel":"C0CHAN"}',
  });

  it("has one input per field, in the platform's order, with its defaults", () => {
    expect(view.callback_id).toBe(CREATE_MODAL);
    expect(view.blocks.map((b) => b.block_id)).toEqual(Object.values(CREATE_FIELDS));
    const element = (id: string) =>
      (
        view.blocks.find((b) => b.block_id === id) as unknown as {
          element: Record<string, unknown>;
        }
      ).element;
    expect(element("vm_name").initial_value).toBe("web-01");
    expect(element("vm_gateway").initial_value).toBe("10.0.0.1");
    expect(element("vm_dns").initial_value).toBe("10.0.0.53");
    expect(element("vm_cores")).toMatchObject({ type: "number_input", initial_value: "2" });
    expect(element("vm_memory")).toMatchObject({ initial_value: "2048", min_value: "512" });
    expect(element("vm_disk")).toMatchObject({ initial_value: "20", max_value: "65536" });
    expect(element("vm_node")).toMatchObject({
      type: "static_select",
      initial_option: { value: "pve" },
    });
    expect(element("vm_template")).toMatchObject({ initial_option: { value: "9000" } });
  });

  it("marks only VM ID and VLAN as optional", () => {
    const optional = view.blocks
      .filter((b) => (b as { optional?: boolean }).optional)
      .map((b) => b.block_id);
    expect(optional).toEqual(["vm_id", "vm_vlan"]);
  });

  it("stays within Slack's modal limits", () => {
    expect(view.blocks.length).toBeLessThanOrEqual(100);
    expect(view.title.text.length).toBeLessThanOrEqual(24);
  });
});

describe("requestMessage", () => {
  it("shows the inputs as fields and the queued status", () => {
    const message = requestMessage(request);
    expect(message.text).toBe("VM web-01 — Queued");
    expect(message.blocks[0]).toEqual({
      type: "header",
      text: { type: "plain_text", text: "VM web-01 — Queued" },
    });
    const body = texts(message.blocks);
    expect(body).toContain("Requested by <@U0REQ>");
    expect(body).toContain("192.168.1.50/24 via 192.168.1.1");
    expect(body).toContain("*VM ID*\\nauto");
    expect(body).toContain("*VLAN*\\nuntagged");
    expect(body).toContain("Starting the GitLab pipeline…");
  });

  it("links the pipeline once it exists", () => {
    const message = requestMessage({
      ...request,
      pipelineId: 42,
      pipelineUrl: "https://gitlab.example.com/infra/vms/-/pipelines/42",
    });
    expect(texts(message.blocks)).toContain(
      "GitLab <https://gitlab.example.com/infra/vms/-/pipelines/42|pipeline #42> started: waiting for Terraform to plan.",
    );
  });

  it("says why a request failed", () => {
    const message = requestMessage({ ...request, status: "failed", error: "GitLab said no." });
    expect(message.text).toBe("VM web-01 — Failed");
    expect(texts(message.blocks)).toContain(":x: GitLab said no.");
  });

  it("escapes notes so text from outside cannot ping anyone", () => {
    const message = requestMessage({ ...request, notes: ["<!channel> & co"] });
    expect(texts(message.blocks)).toContain("&lt;!channel&gt; &amp; co");
    expect(texts(message.blocks)).not.toContain("<!channel>");
  });
});

describe("helpMessage", () => {
  it("shows Slack-encoded command text as typed, with no way out of its code span", () => {
    const message = helpMessage("&lt;!channel&gt; `rm` &amp; more");
    expect(message.text).toContain("`&lt;!channel&gt; 'rm' &amp; more` is not a vmbot command.");
  });

  it("quotes an unknown subcommand, escaped", () => {
    const message = helpMessage("<!here> destroy");
    expect(message.text).toContain("`&lt;!here&gt; destroy` is not a vmbot command.");
    expect(message.text).toContain("/vm create [name]");
  });
});
