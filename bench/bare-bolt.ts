import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Gitlab } from "@gitbeaker/rest";
import { App, HTTPReceiver, type types } from "@slack/bolt";
import { CREATE_MODAL } from "../src/ids.js";

export interface BareBoltOptions {
  signingSecret: string;
  botToken: string;
  slackApiUrl: string;
  gitlabUrl: string;
  gitlabToken: string;
  project: string;
  /** The modal `/vm` opens: the same one every time, built before the first command. */
  view: types.ModalView;
  host?: string;
}

export interface BareBolt {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * The baseline the benchmarks hold vmbot against: a Bolt app doing the least a Slack app can for
 * the same traffic. `/vm` is acknowledged and a fixed modal opened; its submission (callback_id
 * `vm_create_modal`) is acknowledged and one pipeline created with gitbeaker. No store, no checks.
 */
export async function startBareBolt(options: BareBoltOptions): Promise<BareBolt> {
  const receiver = new HTTPReceiver({ signingSecret: options.signingSecret });
  const app = new App({
    token: options.botToken,
    receiver,
    tokenVerificationEnabled: false,
    clientOptions: { slackApiUrl: options.slackApiUrl },
  });
  const api = new Gitlab({ host: options.gitlabUrl, token: options.gitlabToken });
  app.command("/vm", async ({ ack, client, command }) => {
    await ack();
    await client.views.open({ trigger_id: command.trigger_id, view: options.view });
  });
  // gitbeaker's types do not list `inputs`; it sends them on, as it does for vmbot.
  const pipeline: { inputs: Record<string, string>; variables?: [] } = {
    inputs: { vm_name: "web-01", vm_ip: "192.168.1.50/24" },
  };
  app.view(CREATE_MODAL, async ({ ack }) => {
    await ack();
    await api.Pipelines.create(options.project, "main", pipeline);
  });
  const server: Server = createServer(receiver.requestListener);
  await new Promise<void>((resolve) => server.listen(0, options.host ?? "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}
