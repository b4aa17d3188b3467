// Every view of the desk's page, in headless Chromium at a phone's width (375 px) and a
// desktop's (1280 px), driven by keyboard where a person would: the greeting (chat), the orders
// with one open, a question's dialog, the inbox; axe-core finds no serious or critical
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
  }, { width, height });
}

await run.finish();
