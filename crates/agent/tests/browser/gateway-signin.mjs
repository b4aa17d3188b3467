// Each person's own sign-in to an upstream, through mcp-gateway, in headless Chromium: the
// order service requires OAuth tokens from the TypeScript SDK's demo authorization server and
// is marked per-person at the gateway, whose front door takes Ana's and Ben's tokens. A
// 2025-11-25 client (Ana) and a 2026-07-28 client (Ben) are each asked by URL; the page the
// link opens asks the browser who it is, sends the person asked on to the authorization server
// and back; the call goes on. A link opened in someone else's browser changes nothing.
// Usage: node gateway-signin.mjs GATEWAY_MCP_URL ANA_TOKEN BEN_TOKEN
// Prints one line per scenario; the caller checks the order service's and the authorization
// server's logs (one call each; no gateway token ever introspected).
import { launch } from "./harness.mjs";

const [gateway, ana, ben] = process.argv.slice(2);
const run = await launch();

async function post(token, body, headers = {}) {
  return fetch(gateway, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${token}`,
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

// The JSON-RPC messages of an answer: its JSON body, or each event of its SSE stream.
async function* messages(response) {
  if (!(response.headers.get("content-type") || "").includes("text/event-stream")) {
    const text = await response.text();
    if (text) yield JSON.parse(text);
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
      if (data) yield JSON.parse(data);
    }
  }
}

// A 2025-11-25 session: questions arrive on the call's stream and are answered by `onAsk`.
async function session2025(token) {
  const opened = await post(token, {
    jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: { elicitation: { form: {}, url: {} } },
      clientInfo: { name: "gateway-signin", version: "0" } },
  });
  if (opened.status !== 200) throw new Error(`initialize: ${opened.status}`);
  const headers = { "mcp-session-id": opened.headers.get("mcp-session-id"), "mcp-protocol-version": "2025-11-25" };
  await opened.text();
  await (await post(token, { jsonrpc: "2.0", method: "notifications/initialized" }, headers)).text();
  let next = 10;
  return {
    async call(name, args, onAsk) {
      const id = next++;
      const response = await post(token, { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }, headers);
      for await (const message of messages(response)) {
        if (message.method === "elicitation/create") {
          const result = await onAsk(message.params);
          await (await post(token, { jsonrpc: "2.0", id: message.id, result }, headers)).text();
        } else if (message.id === id) {
          return message;
        }
      }
      throw new Error(`no answer to ${name}`);
    },
  };
}

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {}, url: {} } },
  "io.modelcontextprotocol/clientInfo": { name: "gateway-signin", version: "0" },
};

// A 2026-07-28 call: each round's questions answered by `onAsk`, then retried.
async function call2026(token, name, args, onAsk) {
  let params = { name, arguments: args, _meta: META };
  for (let round = 1; round <= 6; round++) {
    const headers = { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": name };
    const response = await post(token, { jsonrpc: "2.0", id: round, method: "tools/call", params }, headers);
    let answer;
    for await (const message of messages(response)) if (message.id === round) answer = message;
    if (answer?.result?.resultType !== "input_required") return answer;
    const responses = {};
    for (const [key, request] of Object.entries(answer.result.inputRequests)) responses[key] = await onAsk(request.params);
    params = { ...params, inputResponses: responses, requestState: answer.result.requestState };
  }
  throw new Error("more than six rounds");
}

const textOf = (answer) => (answer?.result?.content || []).map((c) => c.text).join("");

// The link opened in `page`: the gateway's own sign-in with `token` when it asks, then the
// authorization server and back. The title the browser ends on.
async function openLink(page, link, token) {
  await page.goto(link);
  if (await page.locator("#gateway-token").count()) {
    await page.fill("#gateway-token", token);
    await page.click("#gateway-sign-in");
    await page.waitForFunction(() => !document.getElementById("gateway-token"));
  }
  await page.waitForSelector("#sign-in-title");
  return page.textContent("#sign-in-title");
}

await run.scenario("per-person upstream: each person is asked by URL in their own revision and signs in with their own account", async (anaPage, anaContext) => {
  const bensContext = await anaContext.browser().newContext();
  const benPage = await bensContext.newPage();
  benPage.setDefaultTimeout(20000);
  try {
    // Ana on 2025-11-25: nobody signed in yet, so the order service's tools stand behind a
    // sign-in tool; calling it asks her by URL inside the call.
    const anas = await session2025(ana);
    let asked = null;
    const signedIn = await anas.call("sign_in_to_orders", {}, async (question) => {
      if (question.mode !== "url") throw new Error(`asked ${JSON.stringify(question)}`);
      asked = question.url;
      const title = await openLink(anaPage, question.url, ana);
      if (title !== "Signed in to orders") throw new Error(`Ana's sign-in ended on ${title}`);
      return { action: "accept" };
    });
    if (!asked || !textOf(signedIn).includes("signed in")) throw new Error(`sign_in_to_orders: ${JSON.stringify(signedIn)}`);

    // Ben on 2026-07-28: his first call is asked by URL in a round; the retry then goes on
    // to the order service with his own token, once.
    const got = await call2026(ben, "get_order", { orderId: "ORD-10003" }, async (question) => {
      if (question.mode !== "url") throw new Error(`asked ${JSON.stringify(question)}`);
      const title = await openLink(benPage, question.url, ben);
      if (title !== "Signed in to orders") throw new Error(`Ben's sign-in ended on ${title}`);
      return { action: "accept" };
    });
    if (!textOf(got).includes("ORD-10003")) throw new Error(`Ben's get_order: ${JSON.stringify(got)}`);
    // His cancel asks only the confirmation now.
    const cancelled = await call2026(ben, "cancel_order", { orderId: "ORD-10002" }, async (question) => {
      if (question.mode === "url") throw new Error("asked to sign in again");
      return { action: "accept", content: { confirmed: true } };
    });
    if (!textOf(cancelled).includes("ORD-10002")) throw new Error(`cancel: ${JSON.stringify(cancelled)}`);

    // Ana signs out of the order service; her next call asks her again. The link opened in
    // Ben's browser is refused and changes nothing; in hers it signs her in, and the call
    // that asked completes.
    const out = await fetch(gateway.replace(/\/mcp$/, "/upstream-sign-out/orders"), {
      method: "POST", headers: { authorization: `Bearer ${ana}` },
    });
    if (out.status !== 204) throw new Error(`sign-out: ${out.status}`);
    const again = await anas.call("get_order", { orderId: "ORD-10005" }, async (question) => {
      if (question.url === asked) throw new Error("the same link twice");
      const refused = await openLink(benPage, question.url, ben);
      if (refused !== "This sign-in was asked of someone else") throw new Error(`Ben's browser got ${refused}`);
      const title = await openLink(anaPage, question.url, ana);
      if (title !== "Signed in to orders") throw new Error(`Ana's second sign-in ended on ${title}`);
      return { action: "accept" };
    });
    if (!textOf(again).includes("ORD-10005")) throw new Error(`Ana's get_order: ${JSON.stringify(again)}`);
  } finally {
    await bensContext.close();
  }
});

await run.finish();
