// MCP Inspector's web client (headless Chromium, driven by playwright-core) against the order
// service, as a person uses it: connect, confirm a cancel in the question the service asks,
// and run recheck_shipments watching its progress. Usage:
//   node web.mjs INSPECTOR_URL ORDERS_URL ERA
// INSPECTOR_URL is the address the Inspector printed (with its API token), ORDERS_URL the order
// service's base URL (its REST API shows the order's status), ERA the Inspector's protocol era
// (legacy: 2025-11-25, modern: 2026-07-28). Prints one line per check ("ok    ..." or
// "FAIL  ..."); exits non-zero if one failed. Screenshots of a failure go to $RESULTS.
const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
const [inspectorUrl, ordersUrl, era] = process.argv.slice(2);
const results = process.env.RESULTS || ".";

const pending = await (await fetch(`${ordersUrl}/api/orders?status=PENDING`)).json();
if (!Array.isArray(pending) || pending.length === 0) {
  console.log(`FAIL  inspector web-${era}: the order service lists no PENDING order`);
  process.exit(1);
}
const orderId = pending[0].orderId;
const statusOf = async (id) => (await (await fetch(`${ordersUrl}/api/orders/${id}`)).json()).status;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
// Every "N of 87" the page shows while recheck_shipments runs: the progress notifications'
// messages (2025-11-25), or the task's status message (2026-07-28, where the call is a task).
await page.addInitScript(() => {
  window.progressSeen = [];
  new MutationObserver(() => {
    const text = document.body ? document.body.innerText : "";
    for (const match of text.matchAll(/(\d+) of (\d+)/g)) {
      const done = Number(match[1]);
      if (!window.progressSeen.includes(done)) window.progressSeen.push(done);
    }
  }).observe(document, { subtree: true, childList: true, characterData: true });
});

let failed = 0;
const check = async (name, steps) => {
  try {
    console.log(`ok    inspector web-${era}: ${await steps()}`);
  } catch (error) {
    failed += 1;
    await page.screenshot({ path: `${results}/web-${era}-${name}.png` }).catch(() => {});
    console.log(`FAIL  inspector web-${era}: ${name}: ${String(error.message || error).split("\n")[0]}`);
  }
};
const timeout = { timeout: 60_000 };

await check("connect", async () => {
  await page.goto(inspectorUrl);
  await page.getByRole("switch").first().check({ force: true });
  await page.getByText("Connected", { exact: true }).waitFor(timeout);
  const version = era === "modern" ? "2026-07-28" : "2025-11-25";
  await page.getByText(`MCP ${version}`).waitFor(timeout);
  await page.getByText("Tools", { exact: true }).first().click();
  return `connected on ${version}`;
});

await check("cancel", async () => {
  await page.getByText("cancel_order", { exact: true }).first().click();
  await page.getByLabel("orderId").first().fill(orderId);
  await page.getByRole("button", { name: "Execute Tool" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByText("Elicitation Request").waitFor(timeout);
  await dialog.getByText(`Cancel order ${orderId}`).waitFor(timeout);
  if ((await statusOf(orderId)) !== "PENDING") throw new Error("the order changed before the answer");
  await dialog.getByLabel("confirmed").check({ force: true });
  await dialog.getByRole("button", { name: "Submit" }).click();
  await page.getByText(`Order ${orderId} is cancelled`).waitFor(timeout);
  const status = await statusOf(orderId);
  if (status !== "CANCELLED") throw new Error(`${orderId} is ${status} after yes`);
  return `the question was asked, yes cancelled ${orderId} (CANCELLED)`;
});

await check("recheck", async () => {
  await page.evaluate(() => { window.progressSeen = []; });
  await page.getByText("recheck_shipments", { exact: true }).first().click();
  await page.getByRole("button", { name: "Execute Tool" }).click();
  await page.getByText(/Rechecked 87 shipments/).waitFor({ timeout: 120_000 });
  const seen = await page.evaluate(() => window.progressSeen);
  const before = seen.filter((done) => done > 0 && done < 87);
  if (before.length === 0) throw new Error(`no progress was shown before the end (saw ${JSON.stringify(seen)})`);
  return `recheck_shipments showed its progress while it ran (${before.length} steps before the last, up to ${Math.max(...seen)} of 87)`;
});

await browser.close();
process.exit(failed === 0 ? 0 : 1);
