import { readHomeView, readModalView } from "./arguments.js";
import { WorkspaceChat } from "./chat.js";
import { MAX_VIEW_STACK } from "./directory.js";
import { missingArgument, SlackApiError, stringArg, viewHash } from "./support.js";
import { type FakeView, type JsonObject, type ModalInput } from "./types.js";

/** views.*: modals, their stacks and hashes, opened with a trigger. */
export class WorkspaceViews extends WorkspaceChat {
  // --- views --------------------------------------------------------------

  protected openView(args: JsonObject): JsonObject {
    const triggerId = this.requireTrigger(args);
    const input = readModalView(args.view);
    this.ensureExternalIdFree(input.external_id, undefined);
    this.triggers.exchange(triggerId);
    const view = this.createView(input, undefined);
    this.viewStacks.set(view.id, [view.id]);
    return { view: structuredClone(view) };
  }

  protected pushView(args: JsonObject): JsonObject {
    const triggerId = this.requireTrigger(args);
    const input = readModalView(args.view);
    this.ensureExternalIdFree(input.external_id, undefined);
    const trigger = this.triggers.exchange(triggerId);
    const stack = this.stackFor(trigger.viewId);
    if (stack.length >= MAX_VIEW_STACK) throw new SlackApiError("push_limit_reached");
    const view = this.createView(input, stack);
    stack.push(view.id);
    return { view: structuredClone(view) };
  }

  protected updateView(args: JsonObject): JsonObject {
    const input = readModalView(args.view);
    const view = this.targetView(args);
    const hash = stringArg(args, "hash");
    if (hash !== undefined && hash !== view.hash) throw new SlackApiError("hash_conflict");
    this.ensureExternalIdFree(input.external_id, view.id);
    Object.assign(view, input, { hash: viewHash() });
    return { view: structuredClone(view) };
  }

  /**
   * views.publish: a user's Home tab, created or replaced. `user_id` is required; an optional
   * `hash` must match the Home's current one (`hash_conflict` otherwise), as with views.update.
   */
  protected publishView(args: JsonObject): JsonObject {
    const userId = stringArg(args, "user_id");
    if (userId === undefined) throw missingArgument("user_id");
    if (this.options.homeTabEnabled === false) throw new SlackApiError("not_enabled");
    const input = readHomeView(args.view);
    const current = this.homes.get(userId);
    const hash = stringArg(args, "hash");
    if (hash !== undefined && hash !== current?.hash) throw new SlackApiError("hash_conflict");
    this.ensureExternalIdFree(input.external_id, current?.id);
    const id = current?.id ?? this.viewIds.take();
    const view: FakeView = {
      id,
      team_id: this.identity.teamId,
      type: "home",
      ...input,
      title: { type: "plain_text", text: "" },
      submit: null,
      close: null,
      state: { values: {} },
      hash: viewHash(),
      root_view_id: id,
      previous_view_id: null,
      app_id: this.identity.appId,
      app_installed_team_id: this.identity.teamId,
      bot_id: this.identity.botId,
    };
    this.homes.set(userId, view);
    return { view: structuredClone(view) };
  }

  protected requireTrigger(args: JsonObject): string {
    const triggerId = stringArg(args, "trigger_id") ?? stringArg(args, "interactivity_pointer");
    if (triggerId === undefined) throw missingArgument("trigger_id");
    return triggerId;
  }

  protected targetView(args: JsonObject): FakeView {
    const viewId = stringArg(args, "view_id");
    const externalId = stringArg(args, "external_id");
    if (viewId === undefined && externalId === undefined) throw missingArgument("view_id");
    const view = this.views.find((candidate) =>
      viewId !== undefined ? candidate.id === viewId : candidate.external_id === externalId,
    );
    if (view === undefined) throw new SlackApiError("not_found");
    return view;
  }

  protected ensureExternalIdFree(externalId: string, ownerViewId: string | undefined): void {
    if (externalId === "") return;
    const owner = [...this.views, ...this.homes.values()].find(
      (view) => view.external_id === externalId,
    );
    if (owner !== undefined && owner.id !== ownerViewId) {
      throw new SlackApiError("duplicate_external_id");
    }
  }

  /** The stack a pushed view joins: the one holding the trigger's view, else the latest opened. */
  protected stackFor(viewId: string | undefined): string[] {
    const stacks = [...this.viewStacks.values()];
    const stack =
      viewId === undefined ? stacks.at(-1) : stacks.find((candidate) => candidate.includes(viewId));
    if (stack === undefined) throw new SlackApiError("not_found");
    return stack;
  }

  protected createView(input: ModalInput, stack: readonly string[] | undefined): FakeView {
    const id = this.viewIds.take();
    const view: FakeView = {
      id,
      team_id: this.identity.teamId,
      type: "modal",
      ...input,
      state: { values: {} },
      hash: viewHash(),
      root_view_id: stack?.[0] ?? id,
      previous_view_id: stack?.at(-1) ?? null,
      app_id: this.identity.appId,
      app_installed_team_id: this.identity.teamId,
      bot_id: this.identity.botId,
    };
    this.views.push(view);
    return view;
  }
}
