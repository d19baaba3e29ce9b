import type { webApi } from "@slack/bolt";
import type { Leader } from "../store/postgres/leader.js";

type SlackClient = webApi.WebClient;

/**
 * The led work's Slack client on a replica sharing PostgreSQL. Each call that changes what
 * people see (a post, an update, a delete, a file shared) first confirms that this replica still
 * leads (`Leader.confirm`: its epoch is still the one in the lease row), and is
 * refused with a FencedError, sending nothing, when it does not. A leader paused past its lease
 * (a stopped process, a long pause of the runtime, a network partition) that resumes in the
 * middle of a pass posts nothing the new leader has posted or will post. Slack cannot check an
 * epoch itself: what is left is the moment between the check and the request leaving.
 * Reading calls (users, conversations, upload addresses) go straight through.
 */
export function fencedSlackClient(
  client: SlackClient,
  fence: Pick<Leader, "confirm">,
): SlackClient {
  const guard =
    <A extends unknown[], R>(what: string, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await fence.confirm(what);
      return call(...args);
    };
  const chat: SlackClient["chat"] = {
    ...client.chat,
    postMessage: guard("post a message to Slack", client.chat.postMessage),
    postEphemeral: guard("post a message to Slack", client.chat.postEphemeral),
    update: guard("update a message in Slack", client.chat.update),
    delete: guard("delete a message in Slack", client.chat.delete),
  };
  const files: SlackClient["files"] = {
    ...client.files,
    completeUploadExternal: guard("share a file in Slack", client.files.completeUploadExternal),
  };
  return new Proxy(client, {
    get(target, key, receiver) {
      if (key === "chat") return chat;
      if (key === "files") return files;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
}
