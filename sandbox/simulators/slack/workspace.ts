import { type MethodHandler } from "./directory.js";
import { WorkspaceFiles } from "./files.js";
import { SlackApiError } from "./support.js";
import { type JsonObject } from "./types.js";

/** The workspace: every Web API method the fake serves, by name. */
export class SlackWorkspace extends WorkspaceFiles {
  readonly methods: ReadonlyMap<string, MethodHandler> = new Map<string, MethodHandler>([
    ["auth.test", () => this.authTest()],
    ["chat.postMessage", (args) => this.postMessage(args)],
    ["chat.update", (args) => this.updateMessage(args)],
    ["chat.delete", (args) => this.deleteMessage(args)],
    ["chat.postEphemeral", (args) => this.postEphemeral(args)],
    ["chat.getPermalink", (args) => this.permalink(args)],
    ["views.open", (args) => this.openView(args)],
    ["views.push", (args) => this.pushView(args)],
    ["views.update", (args) => this.updateView(args)],
    ["views.publish", (args) => this.publishView(args)],
    ["conversations.info", (args) => this.conversationInfo(args)],
    ["conversations.history", (args) => this.history(args)],
    ["conversations.open", (args) => this.openConversation(args)],
    ["conversations.replies", (args) => this.replies(args)],
    ["users.info", (args) => this.userInfo(args)],
    ["usergroups.users.list", (args) => this.usergroupMembers(args)],
    ["files.getUploadURLExternal", (args) => this.startUpload(args)],
    ["files.completeUploadExternal", (args) => this.completeUploads(args)],
  ]);

  /** Runs a method for a caller holding `token`; returns the response body. */
  call(method: string, args: JsonObject, token: string | undefined): JsonObject {
    const extra = this.extraMethods.get(method);
    if (extra !== undefined) return extra({ token, args });
    const handler = this.methods.get(method);
    if (handler === undefined) return { ok: false, error: "unknown_method", req_method: method };
    try {
      this.authenticate(token);
      return { ok: true, ...handler(args) };
    } catch (error) {
      if (!(error instanceof SlackApiError)) throw error;
      const body: JsonObject = { ok: false, error: error.code };
      if (error.messages.length > 0) body.response_metadata = { messages: [...error.messages] };
      return body;
    }
  }
}
