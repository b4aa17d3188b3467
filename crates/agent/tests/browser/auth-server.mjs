// The authorization server of the sign-in test: the official TypeScript SDK's demo OAuth 2.1
// server (dynamic client registration, PKCE, an authorization page that approves at once,
// token introspection), as shipped in @modelcontextprotocol/sdk. Usage:
//   node auth-server.mjs MCP_URL
// It listens on a free loopback port (the issuer is http://127.0.0.1:PORT) and prints
// "ready PORT" once it answers, then "introspected TOKEN" for each token a resource server asks
// it about (so a test can tell which tokens reached a server).
import http from "node:http";
import { createRequire } from "node:module";

const sdk = process.env.MCP_SDK_DIR;
const [mcpUrl] = process.argv.slice(2);

// The demo names its issuer from a port it then listens on itself: take a free port first,
// and have the demo's app served on that socket instead of listening again.
const server = http.createServer();
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const { port } = server.address();
server.on("request", (request) => {
  if (request.method !== "POST" || request.url !== "/introspect") return;
  let body = "";
  request.on("data", (chunk) => { body += chunk; });
  request.on("end", () => console.log(`introspected ${new URLSearchParams(body).get("token")}`));
});
const express = createRequire(`${sdk}/package.json`)("express");
express.application.listen = function serveOnTakenPort(_port, callback) {
  server.on("request", this);
  callback?.();
  return server;
};

const { setupAuthServer } = await import(`${sdk}/dist/esm/examples/server/demoInMemoryOAuthProvider.js`);
const authServerUrl = new URL(`http://127.0.0.1:${port}`);
setupAuthServer({ authServerUrl, mcpServerUrl: new URL(mcpUrl), strictResource: false });
const metadata = await fetch(new URL("/.well-known/oauth-authorization-server", authServerUrl));
if (!metadata.ok) throw new Error(`the demo authorization server answered ${metadata.status}`);
console.log(`ready ${port}`);
