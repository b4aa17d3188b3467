// Browser test of the Support Desk demo in headless Chromium (Debian's), driven by
// playwright-core: the confirmation dialog, its countdown and expiry, the status tabs and the
// progress bar, as a person uses them. Usage: node desk.mjs URL
const { chromium } = await import(process.env.PLAYWRIGHT_CORE || "playwright-core");

const url = process.argv[2];
let passed = 0;
let failed = 0;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

async function scenario(name, body) {
  const page = await browser.newPage({ viewport: { width: 1300, height: 800 } });
  page.setDefaultTimeout(20000);
  try {
    await page.goto(url);
    await page.waitForSelector('body[data-ready="true"]');
    await body(page);
    console.log(`ok    browser: ${name}`);
    passed += 1;
  } catch (error) {
    console.log(`FAIL  browser: ${name}: ${error.message.split("\n")[0]}`);
    await page.screenshot({ path: `${process.env.RESULTS || "."}/${name.replace(/\W+/g, "-")}.png` }).catch(() => {});
    failed += 1;
  } finally {
    await page.close();
  }
}

async function tab(page, status) {
  await page.click(`#tabs button[data-status="${status}"]`);
  await page.waitForSelector(`#tabs button[data-status="${status}"][aria-selected="true"]`);
  await page.waitForFunction((s) => [...document.querySelectorAll("#order-list li .badge")].every((b) => b.textContent === s), status);
}

async function ask(page, message) {
  await page.fill("#chat-input", message);
  await page.click("#chat-send");
}

async function lastReply(page, text) {
  await page.waitForFunction((t) => [...document.querySelectorAll(".msg.agent")].some((m) => m.textContent.includes(t)), text);
}

async function inTab(page, status, orderId) {
  await tab(page, status);
  await page.waitForSelector(`#order-list li[data-order-id="${orderId}"]`);
}

await scenario("asking to cancel ORD-10002 opens the dialog; Yes moves it to CANCELLED", async (page) => {
  await inTab(page, "PENDING", "ORD-10002");
  await ask(page, "cancel ORD-10002");
  await page.waitForSelector("#confirm[open]");
  const message = await page.textContent("#confirm-message");
  if (!message.includes("Cancel order ORD-10002 for Marcus Adeyemi")) throw new Error(`dialog says: ${message}`);
  await page.click("#confirm-yes");
  await lastReply(page, "Order ORD-10002 is cancelled");
  await inTab(page, "CANCELLED", "ORD-10002");
});

await scenario("No on ORD-10008 leaves it PENDING", async (page) => {
  await ask(page, "cancel ORD-10008");
  await page.waitForSelector("#confirm[open]");
  await page.click("#confirm-no");
  await lastReply(page, "Order ORD-10008 was not cancelled");
  await inTab(page, "PENDING", "ORD-10008");
});

await scenario("letting the countdown expire leaves ORD-10009 unchanged and says so", async (page) => {
  await ask(page, "cancel ORD-10009");
  await page.waitForSelector("#confirm[open]");
  await page.waitForFunction(() => document.querySelector("#confirm-countdown").textContent
    === "The question expired and the tool has stopped waiting.");
  if (!(await page.isDisabled("#confirm-yes"))) throw new Error("Yes is still enabled after expiry");
  await lastReply(page, "Order ORD-10009 was not cancelled: the question was closed without an answer.");
  await page.click("#confirm-close");
  await inTab(page, "PROCESSING", "ORD-10009");
});

await scenario("refreshing delivery estimates fills the progress bar to 100%", async (page) => {
  await ask(page, "refresh delivery estimates");
  await lastReply(page, "Rechecked 87 shipments");
  await page.waitForFunction(() => document.querySelector("#progress-label").textContent === "100%"
    && document.querySelector("#progress-bar").style.width === "100%");
});

await browser.close();
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
