/**
 * The sandbox end to end, in a real browser: `npm run build`, then `node dist/main.js` (what
 * `npm start` runs) with no Slack credentials, driven through its page by Playwright in Debian's
 * Chromium. Screenshots of the create form and the plan message are written to `docs/`, where the
 * README shows them.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runBot, type BotProcess } from "../support/process.js";

const ROOT = resolve(import.meta.dirname, "../..");
const DOCS = join(ROOT, "docs");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

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
  const reason = `Chromium not found at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;
  if (process.env.CI === "true") throw new Error(`${name}: ${reason}; in CI it is required`);
  describe.skip(`${name} [skipped: ${reason}]`, fn);
}

async function waitFor<T>(
  what: string,
  probe: () => T | undefined,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The request message of `vm`: the top-level message whose header names it. */
const requestMessage = (page: Page, vm: string) =>
  page.locator("article.bk-message:not(.bk-reply)", {
    has: page.locator(".bk-header", { hasText: `VM ${vm}` }),
  });

const POLL = { timeout: 30_000, interval: 100 };

/** The locator's text, for `expect.poll`: Playwright's own `expect` is not in playwright-core. */
const textOf = (locator: Locator) => () => locator.innerText().catch(() => "");

async function openForm(page: Page, text: string): Promise<void> {
  await page.locator("#composer-input").fill(text);
  await page.locator("#composer-input").press("Enter");
  await page.locator("form.bk-modal").waitFor({ state: "visible" });
}

describeWithChromium("the sandbox in a browser", () => {
  let dir: string | undefined;
  let bot: BotProcess | undefined;
  let url = "";
  let browser: Browser | undefined;

  beforeAll(async () => {
    execFileSync("npm", ["run", "-s", "build"], { cwd: ROOT, stdio: "pipe" });
    dir = mkdtempSync(join(tmpdir(), "vmbot-sandbox-"));
    // No .env in its directory and no Slack variable: the sandbox, as on a fresh clone.
    const started = runBot({ PORT: "0", VMBOT_SANDBOX_PACE_MS: "250" }, dir, { built: true });
    bot = started;
    url = await waitFor("the sandbox banner", () => {
      const exited = started.child.exitCode;
      if (exited !== null) throw new Error(`the sandbox exited (${exited}): ${started.stderr()}`);
      return /vmbot sandbox: open (http:\/\/localhost:\d+\/)/.exec(started.stdout())?.[1];
    });
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

  async function newPage(): Promise<Page> {
    if (browser === undefined) throw new Error("the browser did not start");
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.setDefaultTimeout(30_000);
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text());
    });
    await page.goto(url);
    await expect.poll(textOf(page.locator("#status")), POLL).toBe("live");
    // Every later step would be meaningless with a broken script.
    expect(errors).toEqual([]);
    return page;
  }

  it("healthz answers once the banner is out", async () => {
    const response = await fetch(new URL("/healthz", url));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });

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
    await form.screenshot({ path: join(DOCS, "sandbox-create-form.png") });

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
    await request.screenshot({ path: join(DOCS, "sandbox-plan-message.png") });

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
    await page.close();
  }, 120_000);

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
    await page.screenshot({ path: join(DOCS, "sandbox-destroy-confirmation.png") });

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
    await page.close();
  }, 120_000);
});
