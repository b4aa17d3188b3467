// Browser test of streamed replies, in headless Chromium: the desk (`support-agent demo`)
// talks to a scripted fake model that streams (fake-model.mjs). A reply grows on the page
// before it is complete, rendered from Markdown as it grows; Stop ends a long generation and
// the model's request is dropped within a second.
// Usage: node streaming.mjs DESK_URL MODEL_URL
import { launch } from "./harness.mjs";

const [url, model] = process.argv.slice(2);
const run = await launch();

function scenario(name, body) {
  return run.scenario(name, async (page) => {
    await page.goto(url);
    await page.waitForSelector('body[data-ready="true"]');
    await body(page);
  });
}

async function ask(page, message) {
  await page.fill("#chat-input", message);
  await page.click("#chat-send");
}

await scenario("a streamed reply grows on the page before it completes", async (page) => {
  await ask(page, "hello");
  // Two updates of one reply while the chat is still running (Stop is still shown).
  await page.waitForFunction(() => Number((document.body.dataset.replyUpdates || "0").split(",").pop()) >= 2
    && !document.querySelector("#chat-stop").hidden && document.querySelector(".msg.streaming"));
  const partial = await page.textContent(".msg.streaming");
  if (partial.includes("slowly.")) throw new Error(`the reply was complete already: ${partial}`);
  if ((await page.locator(".msg.streaming strong").count()) !== 1) throw new Error("the growing reply is not rendered");
  await page.waitForSelector("#chat-stop", { state: "hidden" });
  const final = page.locator(".msg.agent").last();
  const text = await final.textContent();
  if (!text.startsWith("Hello there, I am a model writing this reply slowly.")) throw new Error(`final reply: ${text}`);
  if (await page.locator(".msg.streaming").count()) throw new Error("the reply still looks unfinished");
  const updates = (await page.getAttribute("body", "data-reply-updates")).split(",").map(Number);
  if (updates.length !== 1 || updates[0] < 2) throw new Error(`updates per reply: ${updates}`);
});

await scenario("Stop ends a long generation and the model's request is dropped within a second", async (page) => {
  await ask(page, "write a long story");
  await page.waitForFunction(() => Number((document.body.dataset.replyUpdates || "0").split(",").pop()) >= 2);
  const stoppedAt = Date.now();
  await page.click("#chat-stop");
  await page.waitForFunction(() => [...document.querySelectorAll(".msg.agent")].some((m) => m.textContent.startsWith("Stopped.")));
  let dropped = null;
  while (dropped === null && Date.now() - stoppedAt < 5000) {
    dropped = (await (await fetch(`${model}/dropped`)).json()).at;
    if (dropped === null) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  if (dropped === null) throw new Error("the model's request was never dropped");
  if (dropped - stoppedAt > 1000) throw new Error(`dropped ${dropped - stoppedAt} ms after Stop`);
  if (await page.locator(".msg.streaming").count()) throw new Error("the stopped reply still looks unfinished");
});

await run.finish();
