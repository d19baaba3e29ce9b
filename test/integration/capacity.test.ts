import { describe, expect, it } from "vitest";
import { fakeNode } from "../../sandbox/simulators/proxmox/index.js";
import { PROXMOX_TEST_TLS, proxmoxTestTls } from "../support/tls.js";
import type { ResponseUrlPost } from "../../sandbox/simulators/slack/index.js";
import { expectWithinSlackLimits } from "../support/block-kit.js";
import { CHANNEL, harnessPerTest, REQUESTER, type Harness } from "../support/harness.js";
import { TEST_SECRETS } from "../support/secrets.js";

const start = harnessPerTest();

/** Types `/vm capacity [arg]` and returns what the bot answered through the response_url. */
async function capacity(h: Harness, arg = "", userId = REQUESTER): Promise<ResponseUrlPost> {
  const delivery = await h.signer.slashCommand({
    text: `capacity ${arg}`.trim(),
    userId,
    channelId: CHANNEL,
  });
  expect(delivery.status).toBe(200);
  return h.slack.waitForResponse((post) => post.url === delivery.responseUrl);
}

const blocksText = (post: ResponseUrlPost) => JSON.stringify(post.body.blocks);
const sectionTexts = (post: ResponseUrlPost) =>
  (post.body.blocks as { type: string; text?: { text: string } }[])
    .filter((block) => block.type === "section")
    .map((block) => block.text?.text ?? "");

describe("/vm capacity", () => {
  it("shows one online node with every figure, privately, read with the API token", async () => {
    const h = await start({
      proxmox: {
        nodes: [
          fakeNode("pve", {
            cores: 16,
            cpu: 0.25,
            memoryGiB: 64,
            memoryUsedGiB: 16,
            diskGiB: 200,
            diskUsedGiB: 50,
          }),
        ],
      },
    });
    const post = await capacity(h);
    expect(post.body.response_type).toBe("ephemeral");
    expectWithinSlackLimits(post.body);
    expect(sectionTexts(post)).toEqual([
      [
        "*pve*  :large_green_circle: online",
        "```CPU     ███░░░░░░░   25% of 16 cores",
        "Memory  ███░░░░░░░  16.0 GiB / 64.0 GiB",
        "Disk    ███░░░░░░░  50.0 GiB / 200.0 GiB```",
      ].join("\n"),
    ]);
    expect(post.body.text).toBe(
      "Proxmox capacity: 1 of 1 node online · CPU 25% of 16 cores · memory 16.0 GiB / 64.0 GiB",
    );
    const [request] = h.proxmox!.requestsTo(/^\/api2\/json\/cluster\/resources$/);
    expect(request?.query.get("type")).toBe("node");
    expect(request?.headers.authorization).toBe(`PVEAPIToken=${TEST_SECRETS.proxmoxToken}`);
    expect(h.gitlabSinceStart()).toHaveLength(0);
  });

  it("lists three nodes by name with the offline one marked and without load", async () => {
    const h = await start({
      proxmox: {
        nodes: [
          fakeNode("pve3", { status: "offline", cores: 8, memoryGiB: 32, lastReport: "recent" }),
          fakeNode("pve1", { cores: 8, cpu: 0.5, memoryGiB: 64, memoryUsedGiB: 32 }),
          fakeNode("pve2", { cores: 8, cpu: 0.1, memoryGiB: 64, memoryUsedGiB: 8 }),
        ],
        shuffleNodes: true,
      },
    });
    const post = await capacity(h);
    expectWithinSlackLimits(post.body);
    const sections = sectionTexts(post);
    expect(sections.map((text) => /^\*(\w+)\*/.exec(text)?.[1])).toEqual(["pve1", "pve2", "pve3"]);
    expect(sections[2]).toBe(
      "*pve3*  :red_circle: *offline*\n8 cores · 32.0 GiB memory · 100.0 GiB disk — load unknown while offline",
    );
    expect(post.body.text).toBe(
      "Proxmox capacity: 2 of 3 nodes online · CPU 30% of 16 cores · memory 40.0 GiB / 128.0 GiB",
    );
  });

  it("shows a node that has been offline for long with only its status", async () => {
    const h = await start({
      proxmox: { nodes: [fakeNode("pve1"), fakeNode("pve9", { status: "offline" })] },
    });
    const sections = sectionTexts(await capacity(h));
    expect(sections[1]).toBe(
      "*pve9*  :red_circle: *offline*\nno figures — load unknown while offline",
    );
  });

  it("posts in the channel with `public`", async () => {
    const h = await start({ proxmox: true });
    const post = await capacity(h, "public");
    expect(post.body.response_type).toBe("in_channel");
    expect(blocksText(post)).toContain("Proxmox capacity");
    // The channel sees who asked, and not the cluster's internal address.
    expect(blocksText(post)).toContain(`Asked for by <@${REQUESTER}>`);
    expect(JSON.stringify(post.body)).not.toContain(h.proxmox!.url);
    expect(JSON.stringify(post.body)).not.toContain("127.0.0.1");
  });

  it("says what was wrong with an argument it does not take, and what it takes", async () => {
    const h = await start({ proxmox: true });
    const answer = await h.signer.slashCommand({
      text: "capacity pve1",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    const body = JSON.parse(answer.body) as { response_type: string; text: string };
    expect(body.response_type).toBe("ephemeral");
    expect(body.text).toBe(
      "`/vm capacity` does not take `pve1`: it always shows every node. Type `/vm capacity` to see it yourself, or `/vm capacity public` to post it in the channel.",
    );
    expect(body.text).not.toContain("could not read");
  });

  it("falls back to /nodes when the cluster-wide listing is refused", async () => {
    const h = await start({ proxmox: true });
    h.proxmox!.failEndpoint("/cluster/resources", { status: 501 });
    const post = await capacity(h);
    expect(sectionTexts(post).map((text) => /^\*(\w+)\*/.exec(text)?.[1])).toEqual([
      "pve1",
      "pve2",
      "pve3",
    ]);
    expect(h.proxmox!.requestsTo(/^\/api2\/json\/nodes$/)).toHaveLength(1);
  });

  it("answers clearly, and privately, when Proxmox is down", async () => {
    const h = await start({ proxmox: true });
    const url = h.proxmox!.url;
    await h.proxmox!.close();
    const post = await capacity(h, "public");
    expect(post.body.response_type).toBe("ephemeral");
    expect(post.body.text).toBe(
      `vmbot could not read the nodes' capacity. Proxmox at ${url} could not be reached (ECONNREFUSED). Check that it is up and PROXMOX_URL is right.`,
    );
  });

  it("answers clearly when Proxmox does not answer in time", async () => {
    const h = await start({ proxmox: true, proxmoxTimeoutMs: 500 });
    h.proxmox!.setDelay("hang");
    const post = await capacity(h);
    expect(post.body.text).toBe(
      `vmbot could not read the nodes' capacity. Proxmox at ${h.proxmox!.url} did not answer within 0.5 seconds.`,
    );
  });

  it("answers clearly when Proxmox refuses the token", async () => {
    const h = await start({ proxmox: true });
    h.proxmox!.setTokenState("deleted");
    const post = await capacity(h);
    expect(post.body.text).toBe(
      `vmbot could not read the nodes' capacity. Proxmox at ${h.proxmox!.url} refused vmbot's API token (401): it is wrong, expired or deleted. Check PROXMOX_TOKEN or the \`api_token\` in Vault (user@realm!tokenid=secret).`,
    );
    expect(JSON.stringify(h.slack.responses)).not.toContain(TEST_SECRETS.proxmoxToken);
  });

  it("says Proxmox is not configured when PROXMOX_URL is unset", async () => {
    const h = await start();
    const delivery = await h.signer.slashCommand({
      text: "capacity",
      userId: REQUESTER,
      channelId: CHANNEL,
    });
    expect(JSON.parse(delivery.body)).toMatchObject({
      response_type: "ephemeral",
      text: "vmbot could not read the nodes' capacity. Proxmox is not configured: an admin sets PROXMOX_URL, and the API token in PROXMOX_TOKEN or in Vault.",
    });
  });

  it("refuses people who may not ask for VMs, without asking Proxmox", async () => {
    const h = await start({ proxmox: true, env: { REQUESTERS: REQUESTER } });
    const post = await capacity(h, "", "U0STRANGER");
    expect(post.body.text).toContain(
      "Capacity is shown to the people who may ask for VMs (<@U0REQUESTER>), and you are not among them.",
    );
    expect(h.proxmox!.requests).toHaveLength(0);
  });
});

describe("Proxmox over TLS", () => {
  it("trusts the cluster with PROXMOX_CA_FILE", async () => {
    const h = await start({
      proxmox: { tls: proxmoxTestTls() },
      env: { PROXMOX_CA_FILE: PROXMOX_TEST_TLS.caFile },
    });
    expect(h.proxmox!.url).toMatch(/^https:/);
    expect(sectionTexts(await capacity(h))).toHaveLength(3);
  });

  it("refuses an untrusted certificate and says how to fix it", async () => {
    const h = await start({ proxmox: { tls: proxmoxTestTls() } });
    const post = await capacity(h);
    expect(post.body.text).toBe(
      `vmbot could not read the nodes' capacity. Proxmox's TLS certificate at ${h.proxmox!.url} is not trusted (UNABLE_TO_VERIFY_LEAF_SIGNATURE): set PROXMOX_CA_FILE to the cluster's CA (/etc/pve/pve-root-ca.pem on a node), or PROXMOX_INSECURE=true.`,
    );
  });

  it("skips verification with PROXMOX_INSECURE=true, and warns once", async () => {
    const h = await start({
      proxmox: { tls: proxmoxTestTls() },
      env: { PROXMOX_INSECURE: "true" },
    });
    expect(sectionTexts(await capacity(h))).toHaveLength(3);
    expect(sectionTexts(await capacity(h))).toHaveLength(3);
    expect(h.logs.filter((line) => line.includes("PROXMOX_INSECURE=true"))).toHaveLength(1);
  });
});
