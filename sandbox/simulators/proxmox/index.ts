/**
 * A fake Proxmox VE API (pveproxy on port 8006) that answers the read-only calls vmbot makes for
 * the node picker: `GET /api2/json/cluster/resources[?type=…]`, `GET /api2/json/nodes` and
 * `GET /api2/json/version`, with API-token authentication, over HTTP or HTTPS.
 *
 * It keeps a list of nodes (`fakeNode` builds one from cores, GiB and load) and derives both
 * listings from it the way `PVE::API2Tools::extract_node_stats` does:
 * - every node of the cluster is listed, as `{id: "node/<name>", node, type: "node", status}`;
 * - an online node adds its load (`cpu` as a fraction of all cores, `mem`, `disk`, `uptime`),
 *   its support `level` and its maxima (`maxcpu`, `maxmem`, `maxdisk`);
 * - a node that is offline or unknown has no load at all. pmxcfs forgets a node's last status
 *   report 5 minutes after it stopped sending them: until then (`lastReport: "recent"`) the node
 *   still shows `level` and its maxima, afterwards (`"expired"`, the default) only its name and
 *   status;
 * - without `Sys.Audit` on `/nodes/<name>` (a privilege-separated token, see `auditableNodes`) a
 *   node keeps its status and level but loses its load and maxima;
 * - `/cluster/resources` adds `cgroup-mode`, `/nodes` adds `ssl_fingerprint`.
 * Proxmox lists nodes in hash order; the fake keeps the order given unless `shuffleNodes` is set.
 *
 * Wire format (pve-http-server's `PVE::APIServer::AnyEvent` with the JSON formatter):
 * - success: 200 `{"data": …}`, `Content-Type: application/json;charset=UTF-8`, gzip-encoded when
 *   the client accepts gzip and the body is over 1024 bytes;
 * - a failed call: the status line carries the message (`HTTP/1.1 403 Permission check failed`)
 *   and the body is `{"data": null, "message": "…\n"}`, with `errors` per parameter for 400;
 *   every answer from 400 up closes the connection;
 * - an unknown call: 501 `Method 'GET /x' not implemented`;
 * - authentication failures are answered before any routing, with 401, the reason in the status
 *   line and no body: `No ticket` without credentials, `no tokenid specified`, `'…' is not a valid
 *   token ID - not able to split into user and token parts`, `no such user ('…')`,
 *   `user '…' is disabled`, `no such token '…' for user '…'`, `token '…' access expired`,
 *   `invalid token value!`. pveproxy holds every 401 back for 3 seconds
 *   (`PVEPROXY_UNAUTHORIZED_DELAY_MS`); the fake only does when told (`unauthorizedDelayMs`).
 *
 * The `Authorization` header is read as pveproxy reads it: `PVEAPIToken=USER@REALM!TOKENID=SECRET`
 * (or `PVEAPIToken USER@…`), up to the first `;`, percent-decoded; the token ID and the secret are
 * split at the last `=`. `:` is not a separator (that is Proxmox Backup Server's
 * `PBSAPIToken=…:secret`): such a header gets `no tokenid specified`.
 *
 * Driving it: `setNodes`/`updateNode` change the cluster, `failEndpoint` makes one call fail until
 * restored (e.g. `/cluster/resources` answering 403 or 501, so a client falls back to `/nodes`),
 * `failNext` injects a failure, delay, hang or dropped connection into the next requests,
 * `setDelay` slows or stalls every answer, `setToken`/`setTokenState` rotate or revoke the token.
 */

export { DEFAULT_NODES, fakeNode, PVEPROXY_UNAUTHORIZED_DELAY_MS } from "./nodes.js";
export { startFakeProxmox } from "./server.js";
export type * from "./types.js";
