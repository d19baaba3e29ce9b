/**
 * The sandbox page's script: renders the channel, the forms and the answers from the exact JSON
 * the bot sent (pushed by the sandbox server as server-sent events), and sends what the person
 * does back to the server, which signs it and delivers it to the bot as Slack would.
 */
import {
  escapeHtml,
  renderBlocks,
  renderConfirm,
  renderConversation,
  renderMessage,
  renderModal,
} from "./blockkit.js";
import { focusedField, modalValues, refocus } from "./form-state.js";
import type { OpenView as View, SandboxPerson as Person, Snapshot } from "./snapshot.js";

const STORAGE_KEY = "vmbot-sandbox-person";

/**
 * This load of the page. Forms open in the page whose action opened them, and the server closes
 * them when this page goes away, as Slack's forms go with the client: a reload shows none.
 */
const TAB = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;

let state: Snapshot | undefined;
let me = localStorage.getItem(STORAGE_KEY) ?? "requester";
/** The modal on screen, so a push that did not change it leaves what is being typed alone. */
let shownView: { id: string; hash: string; user: string } | undefined;
/** The button waiting for its confirmation dialog. */
let confirming: HTMLElement | undefined;
/** What the main pane shows: the channel, or the app's Home tab and its direct messages. */
let pane: "channel" | "home" = "channel";

const byId = (id: string): HTMLElement => {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element;
};

function person(): Person | undefined {
  return state?.people[me];
}

function nameOf(id: string): string | undefined {
  if (state === undefined) return undefined;
  if (id === state.bot.id) return state.bot.name;
  return Object.values(state.people).find((p) => p.id === id)?.realName;
}

const renderOptions = () => ({
  userName: nameOf,
  channelName: (id: string) => (id === state?.channel.id ? state.channel.name : undefined),
  fileUrl: (id: string) => (state?.files.includes(id) ? `/sandbox/files/${id}` : undefined),
  now: new Date(),
});

async function post(path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const response = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ as: me, tab: TAB, ...body }),
  });
  const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok) {
    throw new Error(typeof answer.error === "string" ? answer.error : `HTTP ${response.status}`);
  }
  return answer;
}

/** A problem with a form, shown at its top: the composer's line is behind the overlay. */
function showFormError(form: HTMLFormElement, message: string): void {
  let box = form.querySelector<HTMLElement>(".sb-form-error");
  if (box === null) {
    box = document.createElement("div");
    box.className = "bk-error sb-form-error";
    box.setAttribute("role", "alert");
    form.querySelector(".bk-modal-body")?.prepend(box);
  }
  box.textContent = message;
}

function showError(message: string): void {
  const box = byId("composer-error");
  box.textContent = message;
}

// --- Rendering -------------------------------------------------------------------------------

/** What each element was last given, so a push rewrites only what changed. */
const rendered = new WeakMap<Element, string>();

function setHtml(element: Element, html: string): void {
  if (rendered.get(element) === html) return;
  element.innerHTML = html;
  rendered.set(element, html);
}

/**
 * Brings `box` to `items`, in order, keeping the element of every item whose HTML did not change:
 * a push never replaces the button under the pointer or the text being selected.
 */
function patch(box: HTMLElement, items: readonly { key: string; html: string }[]): void {
  const existing = new Map<string, HTMLElement>();
  for (const child of [...box.children]) {
    if (child instanceof HTMLElement && child.dataset.key !== undefined) {
      existing.set(child.dataset.key, child);
    } else {
      child.remove();
    }
  }
  let previous: Element | null = null;
  for (const item of items) {
    let node = existing.get(item.key);
    existing.delete(item.key);
    if (node === undefined) {
      node = document.createElement("div");
      node.className = "sb-item";
      node.dataset.key = item.key;
    }
    setHtml(node, item.html);
    const expected: Element | null =
      previous === null ? box.firstElementChild : previous.nextElementSibling;
    if (expected !== node) box.insertBefore(node, expected);
    previous = node;
  }
  for (const node of existing.values()) node.remove();
}

function renderPeople(): void {
  if (state === undefined) return;
  setHtml(
    byId("people"),
    Object.entries(state.people)
      .map(
        ([key, p]) =>
          `<button type="button" class="sb-person" role="radio" aria-checked="${key === me ? "true" : "false"}" data-person="${escapeHtml(key)}">${escapeHtml(p.realName)}</button>`,
      )
      .join(""),
  );
}

/**
 * Scenarios switched here whose change the sandbox has not yet answered: a snapshot taken before
 * the switch arrived must not flip the box back under the person's pointer.
 */
const switching = new Map<string, boolean>();

function renderScenarios(): void {
  if (state === undefined) return;
  const on = (s: { name: string; on: boolean }) => switching.get(s.name) ?? s.on;
  setHtml(
    byId("scenarios"),
    state.scenarios
      .map(
        (s) =>
          `<label class="sb-scenario" title="${escapeHtml(s.detail)}"><input type="checkbox" data-scenario="${escapeHtml(s.name)}"${on(s) ? " checked" : ""}> ${escapeHtml(s.label)}</label>`,
      )
      .join(""),
  );
  // Otherwise a box shows what the platform does, not what was clicked a moment ago.
  for (const box of byId("scenarios").querySelectorAll<HTMLInputElement>("[data-scenario]")) {
    box.checked = state.scenarios.some((s) => s.name === box.dataset.scenario && on(s));
  }
}

/** The channel: each top-level message with its thread, and my own ephemeral answers among them. */
function renderMessages(): void {
  if (state === undefined) return;
  const box = byId("messages");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  const options = renderOptions();
  const mine = person();
  const items: { ts: number; key: string; html: string }[] = [];
  const tops = state.messages.filter((m) => m.thread_ts === undefined || m.thread_ts === m.ts);
  const topTs = new Set(tops.map((m) => m.ts));
  for (const top of tops) {
    const replies = state.messages.filter((m) => m.thread_ts === top.ts && m.ts !== top.ts);
    items.push({
      ts: Number(top.ts),
      key: `m${top.ts}`,
      html: renderConversation([top, ...replies], options),
    });
  }
  // Replies whose parent is not in the channel (should not happen): shown where they are.
  for (const stray of state.messages.filter(
    (m) => m.thread_ts !== undefined && m.thread_ts !== m.ts && !topTs.has(m.thread_ts),
  )) {
    items.push({ ts: Number(stray.ts), key: `m${stray.ts}`, html: renderMessage(stray, options) });
  }
  for (const e of state.ephemerals.filter((x) => x.user === mine?.id)) {
    const message = { ts: e.ts, text: e.text, blocks: e.blocks, user: state.bot.id, bot_id: "B" };
    items.push({
      ts: Number(e.ts),
      key: `e${e.id}`,
      html: `<div class="sb-ephemeral" data-ephemeral-id="${escapeHtml(e.id)}">${renderMessage(message, { ...options, ephemeral: true })}</div>`,
    });
  }
  items.sort((a, b) => a.ts - b.ts);
  patch(
    box,
    items.length === 0
      ? [
          {
            key: "empty",
            html: `<p class="sb-empty">No messages yet. Type <code>/vm create web-01</code> below to ask for a VM.</p>`,
          },
        ]
      : items,
  );
  if (atBottom) box.scrollTop = box.scrollHeight;
}

/**
 * Draws `view` in the modal. A redraw of the form on screen (a `views.update` arriving while the
 * person types) keeps what was typed, the field with the focus and its caret; the first drawing
 * of a form focuses its first field, and a drawing with errors the first field in error.
 */
function renderModalFor(view: View, user: string, errors?: Record<string, string>): void {
  const root = byId("modal-root");
  const form = root.querySelector<HTMLFormElement>("form.bk-modal");
  const same = form !== null && shownView?.id === view.id;
  const typed = same ? modalValues(form).state : undefined;
  const focused = same ? focusedField(form) : undefined;
  const scroll = root.querySelector(".bk-modal-body")?.scrollTop;
  root.innerHTML = renderModal(view, {
    ...renderOptions(),
    ...(errors === undefined ? {} : { errors }),
    ...(typed === undefined ? {} : { values: typed }),
  });
  shownView = { id: view.id, hash: view.hash, user };
  const body = root.querySelector(".bk-modal-body");
  if (same && body !== null && scroll !== undefined) body.scrollTop = scroll;
  const invalid = root.querySelector<HTMLElement>('[aria-invalid="true"]');
  if (errors !== undefined && invalid !== null) {
    invalid.focus();
    return;
  }
  if (same) {
    if (focused !== undefined) refocus(root, focused);
    return;
  }
  (invalid ?? root.querySelector<HTMLElement>("input, select, textarea"))?.focus();
}

function renderViews(): void {
  if (state === undefined) return;
  const mine = person();
  const open = state.views
    .filter((v) => v.user === mine?.id && (v.tab === undefined || v.tab === TAB))
    .at(-1);
  if (open === undefined) {
    byId("modal-root").innerHTML = "";
    shownView = undefined;
    return;
  }
  if (shownView?.id === open.view.id && shownView.hash === open.view.hash) return;
  renderModalFor(open.view, open.user);
}

/** The app's Home tab as the bot published it for me, and its direct messages to me below. */
function renderHome(): void {
  const home = byId("home");
  const inHome = pane === "home";
  home.hidden = !inHome;
  byId("messages").hidden = inHome;
  byId("composer").hidden = inHome;
  for (const link of document.querySelectorAll<HTMLElement>("[data-pane]")) {
    if (link.dataset.pane === pane) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const title = document.querySelector(".sb-channel-header h1");
  if (title !== null) title.textContent = inHome ? "vmbot" : `# ${state?.channel.name ?? ""}`;
  if (state === undefined || !inHome) return;
  const mine = person();
  const options = renderOptions();
  const view = mine === undefined ? undefined : state.homes[mine.id];
  setHtml(
    byId("home-view"),
    view === undefined
      ? `<p class="sb-empty">Opening vmbot's Home…</p>`
      : renderBlocks(view.blocks, options),
  );
  const direct = state.direct.filter(
    (m) => mine !== undefined && m.channel === `D${mine.id.slice(1)}`,
  );
  patch(
    byId("direct"),
    direct.length === 0
      ? [{ key: "none", html: `<p class="sb-empty">No message from vmbot yet.</p>` }]
      : direct.map((m) => ({
          key: `d${m.ts}`,
          html: `<div data-dm-ts="${escapeHtml(m.ts)}">${renderMessage(m, options)}</div>`,
        })),
  );
}

/** Opens my Home tab: Slack tells the bot (app_home_opened), which publishes it. */
function openHome(): void {
  void post("/sandbox/home", {}).catch((error: unknown) => {
    showError((error as Error).message);
  });
}

function render(): void {
  renderPeople();
  renderScenarios();
  renderMessages();
  renderHome();
  renderViews();
}

// --- What the person does --------------------------------------------------------------------

async function sendAction(button: HTMLElement): Promise<void> {
  const actionId = button.dataset.actionId;
  if (actionId === undefined) return;
  const ephemeral = button.closest<HTMLElement>("[data-ephemeral-id]")?.dataset.ephemeralId;
  const ts = button.closest<HTMLElement>("article[data-ts]")?.dataset.ts;
  const dm = button.closest<HTMLElement>("[data-dm-ts]")?.dataset.dmTs;
  const where =
    button.closest("#home-view") !== null
      ? { home: true }
      : dm !== undefined
        ? { dm }
        : ephemeral === undefined
          ? { ts }
          : { ephemeral };
  const url = button.dataset.url;
  if (url !== undefined) window.open(url, "_blank", "noopener");
  button.setAttribute("disabled", "");
  try {
    await post("/sandbox/action", {
      action: actionId,
      ...(button.dataset.blockId === undefined ? {} : { block: button.dataset.blockId }),
      ...where,
    });
  } catch (error) {
    showError((error as Error).message);
  } finally {
    button.removeAttribute("disabled");
  }
}

document.addEventListener("click", (event) => {
  const target = event.target instanceof Element ? event.target : null;
  if (target === null) return;

  // The simulated GitLab's pages are served here; its own address only speaks the API.
  const link = target.closest<HTMLAnchorElement>("a[href]");
  if (link !== null && state !== undefined && link.href.startsWith(`${state.gitlab}/`)) {
    event.preventDefault();
    window.open(`/sandbox/gitlab${link.href.slice(state.gitlab.length)}`, "_blank", "noopener");
    return;
  }

  const who = target.closest<HTMLElement>("[data-person]");
  if (who?.dataset.person !== undefined) {
    me = who.dataset.person;
    localStorage.setItem(STORAGE_KEY, me);
    shownView = undefined;
    render();
    if (pane === "home") openHome();
    return;
  }

  const paneLink = target.closest<HTMLElement>("[data-pane]");
  if (paneLink !== null) {
    pane = paneLink.dataset.pane === "home" ? "home" : "channel";
    render();
    if (pane === "home") openHome();
    return;
  }

  const answer = target.closest<HTMLElement>("[data-confirm-answer]");
  if (answer !== null) {
    const button = confirming;
    confirming = undefined;
    byId("confirm-root").innerHTML = "";
    if (answer.dataset.confirmAnswer === "confirm" && button !== undefined) void sendAction(button);
    return;
  }

  const close = target.closest<HTMLElement>("[data-modal-close]");
  if (close !== null && shownView !== undefined) {
    const view = shownView.id;
    byId("modal-root").innerHTML = "";
    shownView = undefined;
    void post("/sandbox/close", { view }).catch((error: unknown) => {
      showError((error as Error).message);
    });
    return;
  }

  const button = target.closest<HTMLElement>('[data-element="button"]');
  if (button !== null && button.closest("form.bk-modal") === null) {
    const confirm = button.dataset.confirm;
    if (confirm !== undefined) {
      confirming = button;
      byId("confirm-root").innerHTML = renderConfirm(JSON.parse(confirm), renderOptions());
      byId("confirm-root").querySelector<HTMLElement>('[data-confirm-answer="deny"]')?.focus();
      return;
    }
    void sendAction(button);
  }
});

document.addEventListener("change", (event) => {
  const box = event.target instanceof HTMLInputElement ? event.target : null;
  const name = box?.dataset.scenario;
  if (box === null || name === undefined) return;
  switching.set(name, box.checked);
  void post("/sandbox/scenario", { name, on: box.checked })
    .catch((error: unknown) => {
      showError((error as Error).message);
    })
    .finally(() => {
      switching.delete(name);
    });
});

document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  const deny = document.querySelector<HTMLElement>('#confirm-root [data-confirm-answer="deny"]');
  if (deny !== null) deny.click();
  else document.querySelector<HTMLElement>("#modal-root [data-modal-close]")?.click();
});

document.addEventListener("submit", (event) => {
  const form = event.target instanceof HTMLFormElement ? event.target : null;
  if (form === null) return;
  event.preventDefault();
  if (form.id === "composer") {
    const input = byId("composer-input") as HTMLInputElement;
    const text = input.value.trim();
    if (text === "") return;
    showError("");
    void post("/sandbox/command", { text })
      .then(() => {
        input.value = "";
      })
      .catch((error: unknown) => {
        showError((error as Error).message);
      });
    return;
  }
  if (form.classList.contains("bk-modal") && shownView !== undefined) {
    const view = shownView;
    const submitButton = form.querySelector<HTMLButtonElement>('button[type="submit"]');
    submitButton?.setAttribute("disabled", "");
    void post("/sandbox/submit", { view: view.id, values: modalValues(form).entries })
      .then((answer) => {
        const errors = answer.errors as Record<string, string> | undefined;
        const current = state?.views.find((v) => v.view.id === view.id)?.view;
        if (errors !== undefined && current !== undefined) {
          renderModalFor(current, view.user, errors);
        }
      })
      .catch((error: unknown) => {
        showFormError(form, (error as Error).message);
      })
      .finally(() => {
        submitButton?.removeAttribute("disabled");
      });
  }
});

let pointerDown = false;
let renderPending = false;
document.addEventListener(
  "pointerdown",
  () => {
    pointerDown = true;
  },
  true,
);
const released = (): void => {
  pointerDown = false;
  if (renderPending) {
    renderPending = false;
    render();
  }
};
// After the click that follows the release has been handled.
document.addEventListener("pointerup", () => setTimeout(released, 0), true);
document.addEventListener("pointercancel", released, true);

// --- Live updates ----------------------------------------------------------------------------

function connect(): void {
  const status = byId("status");
  const events = new EventSource(`/sandbox/events?tab=${encodeURIComponent(TAB)}`);
  events.addEventListener("open", () => {
    status.textContent = "live";
    status.dataset.state = "live";
  });
  events.addEventListener("error", () => {
    status.textContent = "reconnecting…";
    status.dataset.state = "down";
  });
  events.addEventListener("state", (event) => {
    state = JSON.parse((event as MessageEvent<string>).data) as Snapshot;
    if (!Object.hasOwn(state.people, me)) me = "requester";
    // Not between a press and its click: the click would land on nothing.
    if (pointerDown) renderPending = true;
    else render();
  });
}

connect();
