// The desk with tasks (its default), in headless Chromium: a confirmation waits in the order
// service's task, not in the chat: the reply says it waits and the chat goes on; the page is
// reloaded and the question is still pending (in the inbox and its dialog); answered, the
// task's result is said in the conversation and the order is cancelled. A question nobody
// answers in time expires, is shown as expired, and cancels nothing.
// Usage: node tasks.mjs DESK_URL   (the desk runs with --answer-seconds 6; tasks are its default)
import { agentSaid, launch, statusOf } from "./harness.mjs";

const url = process.argv[2];
const run = await launch();

async function ready(page) {
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
}

async function send(page, message) {
  await page.fill("#chat-input", message);
  await page.click("#chat-send");
}

await run.scenario("with tasks: the chat goes on, a reload keeps the question, the answer lands", async (page) => {
  await ready(page);
  await send(page, "cancel ORD-10002");
  await agentSaid(page, "Waiting for your answer");
  await page.waitForSelector("#confirm[open]");
  await page.keyboard.press("Escape");
  // The chat is free: another message is answered while the question waits.
  await page.waitForFunction(() => !document.querySelector("#chat-send").disabled);
  await send(page, "where is ORD-10001?");
  await agentSaid(page, "ORD-10001 is SHIPPED");
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForSelector("#inbox-badge:not([hidden])");
  await page.waitForSelector("#confirm[open]");
  if ((await statusOf(page, "ORD-10002")) !== "PENDING") throw new Error("cancelled before the answer");
  await page.click("#confirm-yes");
  await agentSaid(page, "Order ORD-10002 is cancelled");
  await page.waitForSelector("#inbox-badge", { state: "hidden" });
  if ((await statusOf(page, "ORD-10002")) !== "CANCELLED") throw new Error("not cancelled");
});

await run.scenario("with tasks: a question nobody answers expires, says so, and cancels nothing", async (page) => {
  await ready(page);
  await send(page, "cancel ORD-10008");
  await page.waitForSelector("#confirm[open]");
  await page.waitForFunction(() => document.querySelector("#confirm-countdown").textContent
    === "The question expired and the tool has stopped waiting.");
  await agentSaid(page, "Order ORD-10008 was not cancelled");
  if ((await statusOf(page, "ORD-10008")) !== "PENDING") throw new Error("an unanswered question cancelled");
});

await run.finish();
