// The order service's two benchmark tools on the TypeScript MCP SDK v2, for scripts/bench.
//
// node server.mjs PORT ORDERS_JSON [sessions] serves `get_order` and a confirmed `cancel_order`
// over Streamable HTTP on 127.0.0.1:PORT (0: a port of its own; it prints `listening on
// http://ADDR/mcp` once bound), from the orders in ORDERS_JSON (the order service's
// own seed, exported by the benchmark). The confirmation is the SDK's own idiom: the tool
// returns `inputRequired(...)` on 2026-07-28 and reads the answer from `inputResponses` on the
// retry; 2025-era requests are served by the SDK's stateless legacy fallback. With `sessions`
// it serves 2025-11-25 sessions instead (a transport and a server per session, the SDK's
// stateful idiom), where the tool asks with `ctx.mcpReq.send(...)`, the request tied to the
// call (so it travels on the call's own stream; `elicitInput` goes to the session's GET stream).
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';

import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import { McpServer, acceptedContent, createMcpHandler, inputRequired } from '@modelcontextprotocol/server';
import * as z from 'zod';

const [port, file, mode] = process.argv.slice(2);
const orders = new Map(JSON.parse(fs.readFileSync(file, 'utf8')).map((order) => [order.orderId, order]));
const cancellable = new Set(['PENDING', 'PROCESSING']);
const confirmation = z.object({ confirmed: z.boolean() });
const text = (value) => ({ content: [{ type: 'text', text: value }] });
const unknown = (id) => text(`No order with ID '${id}'. Check the ID and try again.`);

/** get_order, the same on both revisions. */
function registerGetOrder(server) {
    server.registerTool(
        'get_order',
        { description: 'One order by ID, as JSON.', inputSchema: z.object({ orderId: z.string() }) },
        async ({ orderId }) => {
            const order = orders.get(orderId);
            return order ? text(JSON.stringify(order)) : unknown(orderId);
        }
    );
}

function factory() {
    const server = new McpServer({ name: 'orders-typescript', version: '0.0.0' });
    registerGetOrder(server);
    server.registerTool(
        'cancel_order',
        { description: 'Cancel an order once the customer confirms.', inputSchema: z.object({ orderId: z.string() }) },
        async ({ orderId }, ctx) => {
            const order = orders.get(orderId);
            if (!order) return unknown(orderId);
            const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', confirmation);
            if (answer === undefined) {
                return inputRequired({
                    inputRequests: {
                        confirm: inputRequired.elicit({ message: `Cancel order ${orderId}?`, requestedSchema: confirmation })
                    }
                });
            }
            if (answer.confirmed !== true) return text(`Order ${orderId} was not cancelled.`);
            if (!cancellable.has(order.status)) {
                return text(`Order ${orderId} can no longer be cancelled: it is ${order.status}.`);
            }
            order.status = 'CANCELLED';
            return text(`Order ${orderId} is cancelled.`);
        }
    );
    return server;
}

/** The same tools for 2025-11-25 sessions: the confirmation is a server-to-client request. */
function sessionFactory() {
    const server = new McpServer({ name: 'orders-typescript', version: '0.0.0' });
    registerGetOrder(server);
    server.registerTool(
        'cancel_order',
        { description: 'Cancel an order once the customer confirms.', inputSchema: z.object({ orderId: z.string() }) },
        async ({ orderId }, ctx) => {
            const order = orders.get(orderId);
            if (!order) return unknown(orderId);
            const answer = await ctx.mcpReq.send({
                method: 'elicitation/create',
                params: {
                    mode: 'form',
                    message: `Cancel order ${orderId}?`,
                    requestedSchema: { type: 'object', properties: { confirmed: { type: 'boolean' } }, required: ['confirmed'] }
                }
            });
            if (answer.action !== 'accept' || answer.content?.confirmed !== true) {
                return text(`Order ${orderId} was not cancelled.`);
            }
            if (!cancellable.has(order.status)) {
                return text(`Order ${orderId} can no longer be cancelled: it is ${order.status}.`);
            }
            order.status = 'CANCELLED';
            return text(`Order ${orderId} is cancelled.`);
        }
    );
    return server;
}

let listener;
if (mode === 'sessions') {
    const transports = new Map();
    listener = http.createServer(async (req, res) => {
        const id = req.headers['mcp-session-id'];
        let transport = id === undefined ? undefined : transports.get(id);
        if (transport === undefined) {
            if (id !== undefined) {
                res.writeHead(404).end();
                return;
            }
            transport = new NodeStreamableHTTPServerTransport({
                sessionIdGenerator: () => crypto.randomUUID(),
                onsessioninitialized: (sessionId) => transports.set(sessionId, transport)
            });
            transport.onclose = () => transports.delete(transport.sessionId);
            await sessionFactory().connect(transport);
        }
        await transport.handleRequest(req, res);
    });
} else {
    const handler = createMcpHandler(factory);
    listener = http.createServer(toNodeHandler(handler));
}
// PORT 0: a port of its own; where it listens is printed once bound, as our servers print it.
listener.listen(Number(port), '127.0.0.1', () => {
    const { address, port: bound } = listener.address();
    console.error(`listening on http://${address}:${bound}/mcp`);
});
