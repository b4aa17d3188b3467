// The desk in front of mcp-gateway with a per-person upstream, in headless Chromium (issue 72):
// the order service behind the gateway needs each person's own sign-in, which the gateway asks
// for with a URL question. The desk shows it with the page's origin; nothing opens until the
// person clicks; the sign-in happens in the new tab; the call goes on and asks its confirmation;
// a yes cancels the order.
// Usage: node desk-link.mjs DESK_URL GATEWAY_TOKEN ORDER_ID
import { launch, agentSaid, statusOf } from "./harness.mjs";

const [url, token, orderId] = process.argv.slice(2);
const run = await launch();

await run.scenario("a URL question from mcp-gateway signs the person in to orders in a new tab, and the call goes on", async (page) => {
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
  let opened = 0;
  page.on("popup", () => { opened += 1; });
  await page.fill("#chat-input", `cancel ${orderId}`);
  await page.click("#chat-send");
  await page.waitForSelector("#confirm[open]");
  const title = await page.textContent("#confirm-title");
  if (title !== "orders asks you to open a page") throw new Error(`the dialog's title is ${title}`);
  const gateway = new URL(url.replace(/\/$/, "")).origin;
  const target = await page.textContent("#confirm-link");
  if (!target.startsWith("It opens http://127.0.0.1:")) throw new Error(`the link says ${target}`);
  if (target.includes(gateway)) throw new Error(`the link names the desk, not the gateway: ${target}`);
  const open = await page.textContent("#confirm-yes");
  if (!open.startsWith("Open http://127.0.0.1:")) throw new Error(`the button says ${open}`);
  if (!(await page.isVisible("#confirm-cancel"))) throw new Error("no Cancel for a link");
  if (opened !== 0) throw new Error("a tab opened before the person clicked");
  // The person's click opens the gateway's page in a new tab.
  const [tab] = await Promise.all([page.waitForEvent("popup"), page.click("#confirm-yes")]);
  tab.setDefaultTimeout(20000);
  await tab.waitForLoadState();
  if (await tab.locator("#gateway-token").count()) {
    await tab.fill("#gateway-token", token);
    await tab.click("#gateway-sign-in");
  }
  await tab.waitForSelector("#sign-in-title");
  const signedIn = await tab.textContent("#sign-in-title");
  if (signedIn !== "Signed in to orders") throw new Error(`the sign-in ended on ${signedIn}`);
  // The call went on: the order service's own confirmation comes next.
  await page.waitForFunction(() => document.querySelector("#confirm[open]")
    && document.querySelector("#confirm-title").textContent === "orders asks you to confirm");
  const message = await page.textContent("#confirm-message");
  if (!message.includes(orderId)) throw new Error(`the confirmation says ${message}`);
  await page.click("#confirm-yes");
  await agentSaid(page, `Order ${orderId} is cancelled`);
  const status = await statusOf(page, orderId);
  if (status !== "CANCELLED") throw new Error(`the order service says ${orderId} is ${status}`);
  if (opened !== 1) throw new Error(`${opened} tabs opened`);
});

await run.finish();
