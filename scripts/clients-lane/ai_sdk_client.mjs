// The AI SDK's half of the clients lane's AI SDK driver (ai_sdk_client.py starts it): Vercel's
// @ai-sdk/mcp (tools/clients/ai-sdk) as an application holds it, driven by JSON lines on stdin.
//   in:  {"id": N, "op": "open", "url": U, "headers": {...}, "revision": R}
//        {"id": N, "op": "list"} | {"id": N, "op": "call", "name": T, "arguments": {...}}
//        {"op": "answer", "ask": K, "result": {...}}   (the answer to a question it passed on)
//   out: {"reply": N, "result": ...} | {"reply": N, "error": "..."}
//        {"ask": K, "message": M, "url": U|null, "schema": S|null}   (a question for the person)
// Revision: '2026-07-28' lets the client discover it (server/discover, its default);
// '2025-11-25' turns discovery off, so it starts with initialize.
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

// The package as installed in the tools cache ($LANE_AI_SDK, the folder holding node_modules).
const installed = createRequire(path.join(process.env.LANE_AI_SDK, "package.json"));
const { createMCPClient, ElicitationRequestSchema } = await import(
  pathToFileURL(installed.resolve("@ai-sdk/mcp")).href
);

let client;
let asks = 0;
const waiting = new Map();
const send = (line) => process.stdout.write(JSON.stringify(line) + "\n");

async function run(request) {
  switch (request.op) {
    case "open":
      client = await createMCPClient({
        transport: { type: "http", url: request.url, headers: request.headers },
        protocolVersionDiscovery: request.revision !== "2025-11-25",
        // Forms only: declaring URL questions too was tried, and 2.0.99 drops a URL question's
        // url on 2025-11-25 and refuses one on 2026-07-28 ("Only form elicitation is supported").
        capabilities: { elicitation: {} },
      });
      client.onElicitationRequest(ElicitationRequestSchema, (question) => {
        const ask = ++asks;
        const { message, url = null, requestedSchema = null } = question.params;
        send({ ask, message, url, schema: requestedSchema });
        return new Promise((resolve) => waiting.set(ask, resolve));
      });
      return client.serverInfo;
    case "list":
      return (await client.listTools()).tools.map((tool) => tool.name);
    case "call":
      return await client.callTool({ name: request.name, arguments: request.arguments });
    case "close":
      await client?.close();
      return null;
    default:
      throw new Error(`no op ${request.op}`);
  }
}

for await (const text of readline.createInterface({ input: process.stdin })) {
  const request = JSON.parse(text);
  if (request.op === "answer") {
    waiting.get(request.ask)?.(request.result);
    waiting.delete(request.ask);
    continue;
  }
  run(request).then(
    (result) => send({ reply: request.id, result: result ?? null }),
    (error) => send({ reply: request.id, error: String(error?.stack ?? error) }),
  );
}
