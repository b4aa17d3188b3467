// The sign-in, end to end in headless Chromium: the desk's order service requires an OAuth
// token from a real authorization server (the TypeScript SDK's demo server). The page shows a
// "Sign in to orders" link; following it goes through the authorization server and back to the
// desk's /oauth/callback; the orders the page asked for before signing in then arrive, and a
// question asked after goes through with the token.
// Usage: node signin.mjs URL
import { launch } from "./harness.mjs";

const url = process.argv[2];
const run = await launch();

await run.scenario("a server that needs a sign-in shows the link; signing in lets the waiting call through", async (page, context) => {
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
  const link = page.locator("#sign-ins a", { hasText: "Sign in to orders" });
  await link.waitFor();
  const href = await link.getAttribute("href");
  // The link goes through the desk, which notes this browser before sending it on.
  if (!href.startsWith("/oauth/start?state=")) throw new Error(`link: ${href}`);
  // The orders tab asked before anybody signed in: it is still waiting.
  if (await page.locator('#order-list li[data-order-id="ORD-10002"]').count() !== 0) {
    throw new Error("orders arrived before the sign-in");
  }
  const [tab] = await Promise.all([context.waitForEvent("page"), link.click()]);
  await tab.waitForSelector("#sign-in-title");
  const title = await tab.textContent("#sign-in-title");
  if (title !== "Signed in to orders") throw new Error(`callback page: ${title}`);
  if (!tab.url().includes("/oauth/callback?")) throw new Error(`callback at ${tab.url()}`);
  // Back on the desk: the link is gone, the page says so, and the waiting call went through.
  await page.waitForFunction(() => document.getElementById("sign-ins").hidden);
  await page.waitForFunction(() => [...document.querySelectorAll(".msg.agent")]
    .some((m) => m.textContent === "Signed in to orders."));
  await page.click('#tabs button[data-status="PENDING"]');
  await page.waitForSelector('#order-list li[data-order-id="ORD-10002"]');
  // A question after the sign-in goes through with the token.
  await page.fill("#chat-input", "where is ORD-10001?");
  await page.click("#chat-send");
  await page.waitForFunction(() => [...document.querySelectorAll(".msg.agent")]
    .some((m) => m.textContent.includes("ORD-10001")));
  // The callback is good once: the same address again finds nothing waiting.
  const again = await page.evaluate(async (u) => (await fetch(u)).status, tab.url());
  if (again !== 400) throw new Error(`a replayed callback got ${again}`);
});

await run.finish();
