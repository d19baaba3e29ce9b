import { UPLOAD_PREFIX } from "./requests.js";
import { isObject, missingArgument, numberArg, SlackApiError, stringArg } from "./support.js";
import { type FakeMessage, type FakeUpload, type JsonObject } from "./types.js";
import { WorkspaceViews } from "./views.js";

/** files.getUploadURLExternal and files.completeUploadExternal. */
export class WorkspaceFiles extends WorkspaceViews {
  // --- files --------------------------------------------------------------

  protected startUpload(args: JsonObject): JsonObject {
    const filename = stringArg(args, "filename");
    if (filename === undefined) throw missingArgument("filename");
    const length = numberArg(args, "length");
    if (length === undefined || length < 1) throw missingArgument("length");
    const upload: FakeUpload = {
      id: this.fileIds.take(),
      filename,
      title: filename,
      length,
      completed: false,
    };
    this.uploads.push(upload);
    return {
      upload_url: `${this.options.baseUrl()}${UPLOAD_PREFIX}${upload.id}`,
      file_id: upload.id,
    };
  }

  protected completeUploads(args: JsonObject): JsonObject {
    const files = args.files;
    if (!Array.isArray(files) || files.length === 0) throw missingArgument("files");
    const channelArg = stringArg(args, "channel_id") ?? stringArg(args, "channels")?.split(",")[0];
    const channel = channelArg === undefined ? undefined : this.resolveChannel(channelArg);
    const completed = files.map((file) => this.completeUpload(file, channel?.id, args));
    return { files: completed };
  }

  protected completeUpload(
    file: unknown,
    channel: string | undefined,
    args: JsonObject,
  ): JsonObject {
    const upload = isObject(file) && typeof file.id === "string" ? this.upload(file.id) : undefined;
    if (upload?.content === undefined || upload.completed)
      throw new SlackApiError("file_not_found");
    upload.completed = true;
    if (isObject(file) && typeof file.title === "string") upload.title = file.title;
    if (channel !== undefined) upload.channel = channel;
    upload.initial_comment = stringArg(args, "initial_comment");
    upload.thread_ts = stringArg(args, "thread_ts");
    if (channel !== undefined) {
      // Sharing a file posts a message from the app that carries it, in the thread if given.
      const message: FakeMessage = {
        channel,
        ts: this.clock.next(),
        text: upload.initial_comment ?? "",
        blocks: [],
        files: [{ id: upload.id, name: upload.filename, title: upload.title }],
        user: this.identity.botUserId,
        bot_id: this.identity.botId,
        app_id: this.identity.appId,
      };
      if (upload.thread_ts !== undefined) message.thread_ts = upload.thread_ts;
      this.messages.push(message);
    }
    return {
      id: upload.id,
      name: upload.filename,
      title: upload.title,
      size: upload.content.length,
      channels: channel === undefined ? [] : [channel],
    };
  }
}
