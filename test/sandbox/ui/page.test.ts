/**
 * The sandbox end to end, in a real browser: `npm start`'s entry (`sandbox/main.ts`, with its
 * page's scripts, as compiled once for the test run by test/setup/bot-bundle.ts) with no Slack
 * credentials, driven through its page by Playwright in Debian's Chromium. Screenshots of the create form, the plan message and the destroy confirmation are
 * written to `docs/`, where the README shows them, when `UPDATE_SCREENSHOTS=1`.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { CHROMIUM, INSTALL_CHROMIUM } from "../../setup/chromium.js";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { runBot, type BotProcess } from "../../support/process.js";
import { waitFor } from "../../support/wait.js";

const ROOT = resolve(import.meta.dirname, "../../..");
/**
 * Where the screenshots go: the README's pictures in `docs/` only when asked
 * (`UPDATE_SCREENSHOTS=1`), else a scratch folder, so a plain `npm test` changes no tracked file.
 */
const SHOTS =
  process.env.UPDATE_SCREENSHOTS === "1"
    ? join(ROOT, "docs")
    : mkdtempSync(join(tmpdir(), "vmbot-screenshots-"));

/** As Debian's Chromium runs here: headless, as root, with no network beyond loopback. */
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * `describe` for the browser tests: without Chromium they are skipped with the reason in the
 * title; with `CI=true` a missing Chromium fails the file (`.ci/run` installs it).
 */
function describeWithChromium(name: string, fn: () => void): void {
  if (existsSync(CHROMIUM)) {
    describe(name, fn);
    return;
  }
  const reason = `Chromium not found at ${CHROMIUM} (${INSTALL_CHROMIUM}, or set CHROMIUM_PATH)`;
  if (process.env.CI === "true") throw new Error(`${name}: ${reason}; in CI it is required`);
  describe.skip(`${name} [skipped: ${reason}]`, fn);
}

/** The request message of `vm`: the top-level message whose header names it. */

/**
 * A picture of what `locator` finds. The page draws a message anew whenever the bot updates it, so
 * a picture started just as that happens finds its element gone: it is taken again.
 */
async function screenshotOf(locator: Locator, path: string): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await locator.screenshot({ path });
      return;
    } catch (error) {
      if (attempt >= 5 || !String(error).includes("not attached")) throw error;
    }
  }
}

const requestMessage = (page: Page, vm: string) =>
  page.locator("article.bk-message:not(.bk-reply)", {
    has: page.locator(".bk-header", { hasText: `VM ${vm}` }),
  });

const POLL = { timeout: 30_000, interval: 100 };

/**
 * Run in the page: the words squeezed by the layout in the elements matching `selector` (a word
 * ends at a space, a hyphen or a slash, where a line may break). A word is
 * squeezed when its element is narrower than the word (up to 100 px, so a long file name may still
 * wrap) or when the word is split over lines although it fits on one: one letter per line is both.
 * Written as source text since the tests' types have no DOM.
 */
const SQUEEZED_WORDS = `(selector) => {
  const found = [];
  for (const element of document.querySelectorAll(selector)) {
    const box = element.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/[^\\s/-]{2,}/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const rects = [...range.getClientRects()].filter((r) => r.width > 0);
        const width = rects.reduce((sum, r) => sum + r.width, 0);
        const lines = new Set(rects.map((r) => Math.round(r.top))).size;
        const where = element.className + " " + JSON.stringify(match[0]);
        if (box.width + 1 < Math.min(width, 100)) {
          found.push(where + " in " + Math.round(box.width) + " px, needs " + Math.round(width));
        } else if (lines > 1 && width <= box.width) {
          found.push(where + " split over " + lines + " lines in " + Math.round(box.width) + " px");
        }
      }
    }
  }
  return found;
}`;

/**
 * Run in the page, in one go (a push may redraw the message between two separate looks): whether
 * the file card naming `name` fits in its message, and its file name in the card.
 */
const FILE_CARD_FIT = `(name) => {
  const card = [...document.querySelectorAll(".bk-file")].find((c) => c.textContent.includes(name));
  const message = card?.closest("article.bk-message");
  const fileName = card?.querySelector(".bk-file-name");
  if (!card || !message || !fileName) return "no card for " + name;
  const c = card.getBoundingClientRect();
  const m = message.getBoundingClientRect();
  const f = fileName.getBoundingClientRect();
  if (c.right > m.right + 0.5) return "the card ends at " + c.right + " px, its message at " + m.right;
  if (f.right > c.right + 0.5) return "the name ends at " + f.right + " px, its card at " + c.right;
  if (card.scrollWidth > card.clientWidth) return "the card's content is " + card.scrollWidth + " px wide in " + card.clientWidth;
  return "fits";
}`;

/** Where words sit in the page: labels, buttons, fields, headers, message text, file cards. */
const WORDS =
  ".bk-label, .bk-hint, .bk-button, .bk-modal-title, .bk-header, .bk-section-text, .bk-field, " +
  ".bk-context-item, .bk-text, .bk-author, .bk-file-title, .bk-file-name, .sb-person, " +
  ".sb-scenario, .sb-channel-header h1, .bk-composer input";

async function squeezedWords(page: Page): Promise<string[]> {
  const found: unknown = await page.evaluate(`(${SQUEEZED_WORDS})(${JSON.stringify(WORDS)})`);
  return z.array(z.string()).parse(found);
}

/** The locator's text, for `expect.poll`: Playwright's own `expect` is not in playwright-core. */
const textOf = (locator: Locator) => () => locator.innerText().catch(() => "");

async function send(page: Page, text: string): Promise<void> {
  await page.locator("#composer-input").fill(text);
  await page.locator("#composer-input").press("Enter");
  // The composer empties once the bot has taken the command.
  await expect.poll(() => page.locator("#composer-input").inputValue(), POLL).toBe("");
}

async function openForm(page: Page, text: string): Promise<void> {
  await send(page, text);
  await page.locator("form.bk-modal").waitFor({ state: "visible" });
}

describeWithChromium("the sandbox in a browser", () => {
  let dir: string | undefined;
  let bot: BotProcess | undefined;
  let url = "";
  let browser: Browser | undefined;
  const pageErrors = new WeakMap<Page, string[]>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "vmbot-sandbox-"));
    // No .env in its directory and no Slack variable: the sandbox, as on a fresh clone.
    // Leases long enough that none ends while the tests run.
    const started = runBot(
      { PORT: "0", VMBOT_SANDBOX_PACE_MS: "100", VMBOT_SANDBOX_LEASE: "1h" },
      dir,
      { entry: "start" },
    );
    bot = started;
    url = await waitFor(
      () => {
        const exited = started.child.exitCode;
        if (exited !== null) throw new Error(`the sandbox exited (${exited}): ${started.stderr()}`);
        return /vmbot sandbox: open (http:\/\/localhost:\d+\/)/.exec(started.stdout())?.[1];
      },
      "the sandbox banner",
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    url = url.replace("localhost", "127.0.0.1");
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    if (bot?.child.exitCode === null) {
      bot.child.kill("SIGTERM");
      expect(await bot.exited).toBe(0);
    }
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  async function newPage(viewport = { width: 1280, height: 860 }): Promise<Page> {
    if (browser === undefined) throw new Error("the browser did not start");
    const page = await browser.newPage({ viewport });
    page.setDefaultTimeout(30_000);
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text());
    });
    // Every test starts from the platform as it comes: no scenario on.
    for (const name of [
      "replace",
      "failing-configure",
      "unreachable",
      "stuck-lock",
      "slow-proxmox",
    ]) {
      const reset = await fetch(new URL("/sandbox/scenario", url), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name, on: false }),
      });
      expect(reset.status).toBe(200);
    }
    await page.goto(url);
    await expect.poll(textOf(page.locator("#status")), POLL).toBe("live");
    // Every later step would be meaningless with a broken script.
    expect(errors).toEqual([]);
    pageErrors.set(page, errors);
    return page;
  }

  /** Closes the page, failing the test on any script error it had meanwhile. */
  async function closePage(page: Page): Promise<void> {
    expect(pageErrors.get(page)).toEqual([]);
    await page.close();
  }

  it("healthz answers once the banner is out", async () => {
    const response = await fetch(new URL("/healthz", url));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: "ok",
      database: { engine: "sqlite", reachable: true },
    });
  });

  // Early in the file: the bot reuses a node list younger than 15 s, and a form opened with one
  // is not redrawn; here no test has asked Proxmox for its nodes yet.
  it("keeps the field being typed in, its caret and its value when the node list arrives late", async () => {
    const page = await newPage();
    await page.locator('[data-scenario="slow-proxmox"]').check();
    await page.locator('[data-person="requester"]').click();
    await openForm(page, "/vm create web-06");
    const form = page.locator("form.bk-modal");
    const ip = form.locator('[data-action-id="vm_ip"]');
    const live = form.locator(".bk-hint", { hasText: "live from Proxmox" });
    // The form opened before Proxmox answered (with the configured nodes, or the last list read).
    expect(await live.count()).toBe(0);
    await ip.click();
    await page.keyboard.type("192.168.1.24");
    // The caret before "24", as someone going back to fix a digit.
    await page.keyboard.press("ArrowLeft");
    await page.keyboard.press("ArrowLeft");
    expect(await live.count()).toBe(0);

    // The barrier: Proxmox's answer redraws the form with the nodes' free CPU and memory.
    await expect.poll(() => live.count(), POLL).toBe(1);
    expect(await form.locator('[data-action-id="vm_ip"]:focus').count()).toBe(1);
    expect(await ip.inputValue()).toBe("192.168.1.24");
    // Typing goes on where the caret was, in the same field.
    await page.keyboard.type("92/");
    expect(await ip.inputValue()).toBe("192.168.1.92/24");
    expect(await form.locator('[data-action-id="vm_name"]').inputValue()).toBe("web-06");
    await page.locator("form.bk-modal [data-modal-close]").first().click();
    await page.locator("form.bk-modal").waitFor({ state: "detached" });
    await page.locator('[data-scenario="slow-proxmox"]').uncheck();
    await closePage(page);
  }, 60_000);

  it("takes a VM from /vm create to Ready: inline error, plan, self-approval refused, approved", async () => {
    const page = await newPage();
    await page.locator('[data-person="requester"]').click();
    await openForm(page, "/vm create web-01");
    const form = page.locator("form.bk-modal");
    expect(await form.locator('[data-action-id="vm_name"]').inputValue()).toBe("web-01");
    await form.locator('[data-action-id="vm_cores"]').fill("4");
    await form.locator('[data-action-id="vm_ip"]').fill("192.168.1.300/24");
    await form.locator('[data-action-id="vm_node"]').selectOption("pve1");
    await form.locator('button[type="submit"]').click();
    const ipError = form.locator('div.bk-input[data-block-id="vm_ip"] .bk-error');
    await expect.poll(textOf(ipError), POLL).toMatch(/\S/);
    // The other fields keep what was typed.
    expect(await form.locator('[data-action-id="vm_cores"]').inputValue()).toBe("4");

    // The README's picture of the form: the bot's own inline error under the field.
    await screenshotOf(form, join(SHOTS, "sandbox-create-form.png"));

    await form.locator('[data-action-id="vm_ip"]').fill("192.168.1.60/24");
    await form.locator('button[type="submit"]').click();
    await page.locator("form.bk-modal").waitFor({ state: "detached" });

    const request = requestMessage(page, "web-01");
    await expect.poll(textOf(request.locator(".bk-header")), POLL).toContain("Awaiting approval");
    const approve = request.locator('[data-element="button"][data-action-id="plan_approve"]');
    await approve.waitFor({ state: "visible" });
    await request
      .locator('[data-element="button"][data-action-id="plan_reject"]')
      .waitFor({ state: "visible" });
    await screenshotOf(request, join(SHOTS, "sandbox-plan-message.png"));

    // The plan job's link opens its log, served for the simulated GitLab.
    const [log] = await Promise.all([
      page.waitForEvent("popup"),
      request.locator("a.bk-link", { hasText: "plan job" }).click(),
    ]);
    await expect.poll(textOf(log.locator("h1")), POLL).toMatch(/tf:plan: success/);
    const plan = await log.locator("pre").innerText();
    expect(plan).toContain('name                    = "web-01"');
    expect(plan).toContain("Plan: 1 to add, 0 to change, 0 to destroy.");
    expect(plan).not.toContain("\x1b");
    await log.close();

    // The requester may not approve their own plan: an answer only they see.
    await approve.click();
    await expect.poll(textOf(page.locator(".sb-ephemeral")), POLL).toContain("approve");
    expect(await request.locator(".bk-header").innerText()).toContain("Awaiting approval");

    await page.locator('[data-person="approver"]').click();
    // What the requester alone was told is not shown to someone else.
    await expect.poll(() => page.locator(".sb-ephemeral").count(), POLL).toBe(0);
    await approve.click();
    await expect
      .poll(textOf(request.locator(".bk-header")), { ...POLL, timeout: 60_000 })
      .toContain("Ready");
    // The configure result in the thread: Ansible's PLAY RECAP for the host.
    const thread = page.locator(".bk-thread").filter({ has: page.locator(".bk-reply") });
    await expect
      .poll(textOf(thread), POLL)
      .toMatch(/web-01\s+ok=\d+ changed=\d+ unreachable=0 failed=0/);
    await closePage(page);
  }, 120_000);

  it("shows the requester's Home tab: their VM with its lease, Extend lease and Destroy, and Create VM", async () => {
    const page = await newPage();
    await page.locator('[data-person="requester"]').click();
    await page.locator('[data-pane="home"]').click();
    const home = page.locator("#home-view");
    await expect.poll(textOf(home), POLL).toContain("web-01");
    expect(await home.innerText()).toContain("Lease ends");
    const extend = home.locator('[data-element="button"][data-action-id="home_vm_extend"]');
    await extend.first().waitFor({ state: "visible" });
    await home
      .locator('[data-element="button"][data-action-id="home_create"]')
      .waitFor({ state: "visible" });
    // The channel's composer is the channel's: not on the Home.
    expect(await page.locator("#composer").isVisible()).toBe(false);
    await screenshotOf(page.locator(".sb-app"), join(SHOTS, "sandbox-home.png"));

    // Extend from the Home: what came of it in a small modal, as Slack shows one over the Home.
    await extend.first().click();
    const notice = page.locator("form.bk-modal");
    await expect.poll(textOf(notice), POLL).toContain("The lease of web-01 now ends");
    await notice.locator("[data-modal-close]").first().click();
    await notice.waitFor({ state: "detached" });

    // Back to the channel: its messages and composer again.
    await page.locator('[data-pane="channel"]').click();
    await page.locator("#composer").waitFor({ state: "visible" });
    await closePage(page);
  }, 60_000);

  it("with the replace scenario, warns of the destroy and asks for confirmation before approving", async () => {
    const page = await newPage();
    await page.locator('[data-scenario="replace"]').check();
    await page.locator('[data-person="requester"]').click();
    await openForm(page, "/vm create web-02");
    const form = page.locator("form.bk-modal");
    await form.locator('[data-action-id="vm_ip"]').fill("192.168.1.61/24");
    await form.locator('button[type="submit"]').click();
    await page.locator("form.bk-modal").waitFor({ state: "detached" });

    const request = requestMessage(page, "web-02");
    await expect.poll(textOf(request.locator(".bk-header")), POLL).toContain("Awaiting approval");
    expect(await request.innerText()).toContain("This plan destroys");
    const approve = request.locator('[data-element="button"][data-action-id="plan_approve"]');
    expect(await approve.innerText()).toContain("destroys");

    await page.locator('[data-person="approver"]').click();
    await approve.click();
    const dialog = page.locator(".bk-confirm");
    await dialog.waitFor({ state: "visible" });
    expect(await dialog.innerText()).toContain("Destroy resources?");
    expect(await dialog.innerText()).toContain("proxmox_virtual_environment_vm.vm");
    await page.screenshot({ path: join(SHOTS, "sandbox-destroy-confirmation.png") });

    // Going back changes nothing.
    await dialog.locator('[data-confirm-answer="deny"]').click();
    await dialog.waitFor({ state: "detached" });
    expect(await request.locator(".bk-header").innerText()).toContain("Awaiting approval");

    await approve.click();
    await page.locator('.bk-confirm [data-confirm-answer="confirm"]').click();
    await expect
      .poll(textOf(request.locator(".bk-header")), POLL)
      .not.toContain("Awaiting approval");
    await page.locator('[data-scenario="replace"]').uncheck();
    await closePage(page);
  }, 120_000);

  it("answers /vm help and /vm capacity to the asker alone, and refuses someone on no list", async () => {
    const page = await newPage();
    await page.locator('[data-person="requester"]').click();
    const mine = page.locator(".sb-ephemeral");
    const before = await mine.count();
    await send(page, "/vm help");
    await expect.poll(textOf(mine.last()), POLL).toContain("/vm create");
    await send(page, "/vm capacity");
    await expect.poll(() => mine.count(), POLL).toBe(before + 2);
    // The simulated cluster: two nodes up, one offline.
    await expect.poll(textOf(mine.last()), POLL).toMatch(/pve1[\s\S]*pve2[\s\S]*pve3/);
    expect(await mine.last().innerText()).toMatch(/offline/i);

    await page.locator('[data-person="stranger"]').click();
    await expect.poll(() => mine.count(), POLL).toBe(0);
    await send(page, "/vm create web-09");
    await expect.poll(textOf(mine.last()), POLL).toContain("you are not among them");
    expect(await page.locator("form.bk-modal").count()).toBe(0);
    await closePage(page);
  }, 60_000);

  it("with a stuck state lock, the plan fails until an admin force-unlocks it with /vm unlock", async () => {
    const page = await newPage();
    await page.locator('[data-scenario="stuck-lock"]').check();
    await page.locator('[data-person="requester"]').click();
    await openForm(page, "/vm create web-03");
    const form = page.locator("form.bk-modal");
    await form.locator('[data-action-id="vm_ip"]').fill("192.168.1.63/24");
    await form.locator('button[type="submit"]').click();
    const request = requestMessage(page, "web-03");
    await expect.poll(textOf(request.locator(".bk-header")), POLL).toContain("Failed");
    // The cause in one sentence, with the way out; Terraform's error itself is in the thread.
    await expect.poll(textOf(request), POLL).toContain("The Terraform state is locked");
    expect(await request.innerText()).toContain("/vm unlock");

    // Requesters may not unlock.
    await send(page, "/vm unlock");
    await expect
      .poll(textOf(page.locator(".sb-ephemeral").last()), POLL)
      .toContain("may unlock Terraform state");

    await page.locator('[data-person="admin"]').click();
    await send(page, "/vm unlock");
    const answer = page.locator(".sb-ephemeral").last();
    await expect.poll(textOf(answer), POLL).toContain("ci-runner");
    await answer.locator('[data-element="button"]', { hasText: "Force-unlock" }).click();
    const dialog = page.locator(".bk-confirm");
    await dialog.waitFor({ state: "visible" });
    await dialog.locator('[data-confirm-answer="confirm"]').click();
    // The answer is replaced where it stood, and the channel is told.
    await expect.poll(textOf(answer), POLL).toMatch(/unlocked/i);
    await expect
      .poll(textOf(page.locator("article.bk-message:not(.bk-ephemeral)").last()), POLL)
      .toMatch(/unlocked/i);
    await page.locator('[data-scenario="stuck-lock"]').uncheck();
    await closePage(page);
  }, 90_000);

  it("shows a failing configure job in the request and its thread", async () => {
    const page = await newPage();
    await page.locator('[data-scenario="failing-configure"]').check();
    await page.locator('[data-person="requester"]').click();
    await openForm(page, "/vm create web-04");
    const form = page.locator("form.bk-modal");
    await form.locator('[data-action-id="vm_ip"]').fill("192.168.1.64/24");
    await form.locator('button[type="submit"]').click();
    const request = requestMessage(page, "web-04");
    await expect.poll(textOf(request.locator(".bk-header")), POLL).toContain("Awaiting approval");
    await page.locator('[data-person="approver"]').click();
    await request.locator('[data-action-id="plan_approve"]').click();
    await expect
      .poll(textOf(request.locator(".bk-header")), { ...POLL, timeout: 60_000 })
      .toContain("Failed");
    const thread = page.locator(".bk-thread").filter({ hasText: "failed=1" });
    await expect.poll(textOf(thread), POLL).toContain("qemu-guest-agent");
    await page.locator('[data-scenario="failing-configure"]').uncheck();
    await closePage(page);
  }, 90_000);

  it("at 420 px wide, splits no word over lines and wraps a long file name inside its card", async () => {
    const page = await newPage({ width: 420, height: 860 });
    // Alex asks: Robin has asked for VMs in the tests before, and the sandbox's policy holds
    // Robin to three VMs.
    await page.locator('[data-person="approver"]').click();
    // A name without hyphens, the longest a hostname may be: its plan file is named after it.
    const vm = "quarterlyreportingdatabaseforthefinanceteaminthesecondregion012";
    expect(vm).toHaveLength(63);
    await openForm(page, `/vm create ${vm}`);
    const form = page.locator("form.bk-modal");
    await form.locator('[data-action-id="vm_ip"]').fill("192.168.1.66/24");
    expect(await squeezedWords(page)).toEqual([]);
    await screenshotOf(form, join(SHOTS, "sandbox-narrow-create-form.png"));
    await form.locator('button[type="submit"]').click();
    await page.locator("form.bk-modal").waitFor({ state: "detached" });

    const request = requestMessage(page, vm);
    await expect.poll(textOf(request.locator(".bk-header")), POLL).toContain("Awaiting approval");
    const thread = page.locator(".sb-item", { has: request });
    const card = thread.locator(".bk-file", { hasText: vm });
    await card.waitFor({ state: "visible" });
    expect(await squeezedWords(page)).toEqual([]);

    // The card stays inside its message, and the name inside the card.
    expect(await page.evaluate(`(${FILE_CARD_FIT})(${JSON.stringify(vm)})`)).toBe("fits");
    // Nothing sticks out sideways: the page does not scroll horizontally.
    expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(
      true,
    );
    await page.screenshot({ path: join(SHOTS, "sandbox-narrow-plan-message.png") });
    await closePage(page);
  }, 90_000);

  /** The forms the sandbox holds open, by view ID: the first state its event stream sends. */
  async function openViews(): Promise<string[]> {
    const response = await fetch(new URL("/sandbox/events", url));
    if (response.body === null) throw new Error("the event stream has no body");
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let text = "";
    try {
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) throw new Error("the event stream ended before its first state");
        text += decoder.decode(chunk.value as Uint8Array, { stream: true });
        const event = /^event: state\ndata: (.*)\n\n/m.exec(text);
        if (event?.[1] === undefined) continue;
        const state = z
          .object({ views: z.array(z.object({ view: z.object({ id: z.string() }) })) })
          .parse(JSON.parse(event[1]));
        return state.views.map((v) => v.view.id);
      }
    } finally {
      await reader.cancel();
    }
  }

  it("shows a form only in the page that opened it, and closes it when that page reloads", async () => {
    const page = await newPage();
    await page.locator('[data-person="requester"]').click();
    await openForm(page, "/vm create web-07");
    const viewId = await page.locator("form.bk-modal").getAttribute("data-view-id");
    if (viewId === null) throw new Error("the form has no view ID");
    expect(await openViews()).toContain(viewId);

    // The same person in another tab: the form is the first page's, as in Slack's clients.
    const other = await newPage();
    await other.locator('[data-person="requester"]').click();
    await other.locator('[data-person="requester"][aria-checked="true"]').waitFor();
    expect(await other.locator("form.bk-modal").count()).toBe(0);
    await closePage(other);

    // A reload takes the form away, as Slack's would: the sandbox closes it with its page.
    await page.reload();
    await expect.poll(textOf(page.locator("#status")), POLL).toBe("live");
    await expect.poll(openViews, POLL).not.toContain(viewId);
    await page.locator('[data-person="requester"][aria-checked="true"]').waitFor();
    expect(await page.locator("form.bk-modal").count()).toBe(0);
    // The page works on: a new form opens in it.
    await openForm(page, "/vm create web-07");
    expect(await page.locator("form.bk-modal").getAttribute("data-view-id")).not.toBe(viewId);
    await page.locator("form.bk-modal [data-modal-close]").first().click();
    await page.locator("form.bk-modal").waitFor({ state: "detached" });
    await closePage(page);
  }, 60_000);

  it("with a slow Proxmox, still opens the form in Slack's three seconds and answers /vm capacity", async () => {
    const page = await newPage();
    await page.locator('[data-scenario="slow-proxmox"]').check();
    await page.locator('[data-person="requester"]').click();
    // A form that opened means views.open came before the trigger_id expired (3 s, as Slack's).
    await openForm(page, "/vm create web-05");
    const nodes = page.locator('form.bk-modal [data-action-id="vm_node"] option');
    expect(await nodes.count()).toBeGreaterThan(0);
    await page.locator("form.bk-modal [data-modal-close]").first().click();
    await page.locator("form.bk-modal").waitFor({ state: "detached" });

    const mine = page.locator(".sb-ephemeral");
    const before = await mine.count();
    await send(page, "/vm capacity");
    await expect.poll(() => mine.count(), POLL).toBe(before + 1);
    expect(await mine.last().innerText()).toContain("pve1");
    await closePage(page);
  }, 60_000);
});
