// Every view of the desk's page, in headless Chromium at a phone's width (375 px) and a
// desktop's (1280 px), driven by keyboard where a person would: the greeting (chat), the orders
// with one open, a question's dialog, the inbox, a refund e-mail; axe-core finds no serious or critical
// violation on any, and each is photographed to $RESULTS/screenshots (issue 75). The quick
// start is the walk: open, ask to cancel, answer, see the order cancelled.
// Usage: node views.mjs URL
import { launch, accessible, agentSaid, screenshot, statusOf } from "./harness.mjs";

const url = process.argv[2];
const run = await launch();

for (const [width, height, order] of [[375, 812, "ORD-10002"], [1280, 800, "ORD-10008"]]) {
  await run.scenario(`every view at ${width} px is accessible (axe-core) and the quick start works by keyboard`, async (page) => {
    await page.goto(url);
    await page.waitForSelector('body[data-ready="true"]');
    await agentSaid(page, "Hello!");
    await accessible(page, "chat");
    await screenshot(page, "chat");
    // The orders: the PENDING tab, one order open.
    await page.click('#tabs button[data-status="PENDING"]');
    await page.waitForSelector(`#order-list li[data-order-id="${order}"]`);
    await page.click(`#order-list li[data-order-id="${order}"]`);
    await page.waitForSelector("#detail:not([hidden])");
    await accessible(page, "orders");
    await screenshot(page, "orders");
    // The quick start by keyboard: type, Enter, the dialog takes focus; Tab to Yes, Enter.
    await page.focus("#chat-input");
    await page.keyboard.type(`cancel ${order}`);
    await page.keyboard.press("Enter");
    await page.waitForSelector("#confirm[open]");
    const focused = await page.evaluate(() => document.querySelector("#confirm").contains(document.activeElement));
    if (!focused) throw new Error("the dialog did not take the focus");
    await accessible(page, "question");
    await screenshot(page, "question");
    // Put away, then the inbox from its badge.
    await page.click("#confirm-later");
    await page.waitForSelector("#inbox-badge:not([hidden])");
    await page.focus("#inbox-badge");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#inbox[open]");
    await accessible(page, "inbox");
    await screenshot(page, "inbox");
    await page.keyboard.press("Escape");
    await page.waitForSelector("#waiting-open");
    await page.focus("#waiting-open");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#confirm[open]");
    await page.focus("#confirm-yes");
    await page.keyboard.press("Enter");
    await agentSaid(page, `Order ${order} is cancelled`);
    if ((await statusOf(page, order)) !== "CANCELLED") throw new Error(`${order} is not cancelled`);
    // The refund e-mail of the cancelled order, by keyboard: the reasons the order service
    // offers are buttons; one chosen fills the field, and the draft names the order.
    await page.click('#tabs button[data-status="CANCELLED"]');
    await page.waitForSelector(`#order-list li[data-order-id="${order}"]`);
    await page.click(`#order-list li[data-order-id="${order}"]`);
    await page.waitForSelector("#refund-open:not([disabled])");
    await page.focus("#refund-open");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#refund[open]");
    const reasons = await page.$$eval("#refund-chips button", (chips) => chips.map((c) => c.textContent));
    const chosen = reasons.indexOf("faulty");
    if (chosen < 0) throw new Error(`the order service's reasons are not offered: ${reasons}`);
    await page.focus(`#refund-chips button:nth-child(${chosen + 1})`);
    await page.keyboard.press("Enter");
    const reason = await page.$eval("#refund-reason", (input) => input.value);
    if (reason !== "faulty") throw new Error(`the chosen reason is not in the field: "${reason}"`);
    await accessible(page, "refund");
    await screenshot(page, "refund");
    await page.focus("#refund-draft");
    await page.keyboard.press("Enter");
    await page.waitForFunction((id) => document.querySelector("#refund-text").textContent.includes(id), order);
  }, { width, height });
}

await run.finish();
