// The authorization server of the sign-in test: the official TypeScript SDK's demo OAuth 2.1
// server (dynamic client registration, PKCE, an authorization page that approves at once,
// token introspection), as shipped in @modelcontextprotocol/sdk. Usage:
//   node auth-server.mjs PORT MCP_URL
// It listens on PORT (the issuer is http://localhost:PORT) and prints "ready" once it does.
const sdk = process.env.MCP_SDK_DIR;
const { setupAuthServer } = await import(`${sdk}/dist/esm/examples/server/demoInMemoryOAuthProvider.js`);

const [port, mcpUrl] = process.argv.slice(2);
const authServerUrl = new URL(`http://localhost:${port}`);
setupAuthServer({ authServerUrl, mcpServerUrl: new URL(mcpUrl), strictResource: false });
// setupAuthServer listens without telling when; wait until the metadata answers.
for (let attempt = 0; attempt < 100; attempt += 1) {
  try {
    const response = await fetch(new URL("/.well-known/oauth-authorization-server", authServerUrl));
    if (response.ok) {
      console.log("ready");
      break;
    }
  } catch {
    // not listening yet
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
}
