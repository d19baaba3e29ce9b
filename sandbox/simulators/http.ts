import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";

/** A request as a fake server saw it, kept for assertions. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  body: string;
  at: number;
}

export interface FakeServer {
  /** Base URL, e.g. `http://127.0.0.1:40123` (`https://…` when serving TLS). */
  readonly url: string;
  close(): Promise<void>;
}

export type FakeHandler = (req: RecordedRequest, res: ServerResponse) => void | Promise<void>;

export interface FakeServerOptions {
  /**
   * Serve HTTPS instead of HTTP, with this private key and certificate (PEM; `cert` may hold a
   * chain, the server's certificate first).
   */
  tls?: { key: string | Buffer; cert: string | Buffer };
}

/**
 * Starts an HTTP server (HTTPS with `options.tls`) on a free loopback port that buffers each body
 * before handing it on.
 */
export async function startFakeServer(
  handler: FakeHandler,
  options: FakeServerOptions = {},
): Promise<FakeServer> {
  const listener: RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake");
      const recorded: RecordedRequest = {
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
      };
      Promise.resolve(handler(recorded, res)).catch((error: unknown) => {
        if (!res.headersSent) sendJson(res, 500, { message: String(error) });
      });
    });
  };
  const server =
    options.tls === undefined
      ? createServer(listener)
      : createHttpsServer({ key: options.tls.key, cert: options.tls.cert }, listener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls === undefined ? "http" : "https"}://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}
