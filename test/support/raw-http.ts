import { connect, type Socket } from "node:net";

export interface RawAnswer {
  /** The status of the first response line, or undefined when the server sent none. */
  status: number | undefined;
  /** Everything the server sent before it closed the connection. */
  text: string;
}

/**
 * Sends `request` as it is over a new TCP connection to 127.0.0.1:`port` (no client library to
 * tidy a malformed request-target), and resolves with what came back once the server closes the
 * connection (send `Connection: close` with a well-formed one).
 */
export function rawRequest(port: number, request: string | Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "ECONNRESET") return;
      reject(error);
    });
    socket.on("close", () => {
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
      resolve({ status: status === undefined ? undefined : Number(status), text });
    });
    socket.write(request);
  });
}

/** An open connection that has sent `head`; `closed` resolves when the server ends it. */
export function openConnection(
  port: number,
  head = "",
): Promise<{ socket: Socket; closed: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
    });
    const closed = new Promise<string>((resolveClosed) => {
      socket.on("close", () => {
        resolveClosed(text);
      });
    });
    socket.on("error", () => undefined);
    socket.once("connect", () => {
      if (head !== "") socket.write(head);
      resolve({ socket, closed });
    });
    socket.once("error", reject);
  });
}

/** Malformed or hostile request-targets and request lines, each a whole request. */
export const MALFORMED_REQUESTS: readonly string[] = [
  "GET //% HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
  "GET // HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
  "POST //% HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
  "GET http://[ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
  "GET /slack/events\u0000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
  "GARBAGE\r\n\r\n",
  "GET /healthz HTTP/1.1\r\nno colon here\r\n\r\n",
  "POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n",
  "POST /slack/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nzz\r\n",
];
