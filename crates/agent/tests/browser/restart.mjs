// The desk restarted while a confirmation waits, in headless Chromium: the demo (desk and order
// service in one process, tasks on by default) is started on files of its own; the page asks to
// cancel an order and the question waits in the order service's task; the demo is stopped
// (SIGTERM, as Ctrl-C) and started again on the same files and port; the reloaded page has the
// question back in its inbox and dialog, answers it, and the order is cancelled once.
// Usage: node restart.mjs SUPPORT_AGENT DATA_DIR [PROTOCOL]
import { spawn } from "node:child_process";
import { openSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { launch } from "./harness.mjs";

const [binary, dir, protocol = "auto"] = process.argv.slice(2);
const run = await launch();

// Start the demo listening on `listen`; resolves with its URL once it says where.
async function start(listen, n) {
  const log = `${dir}/demo-${n}.log`;
  const out = openSync(log, "w");
  const child = spawn(binary, ["demo", "--listen", listen, "--orders-listen", "127.0.0.1:0",
    "--database", `sqlite://${dir}/orders.sqlite`, "--no-knowledge-base", "--protocol", protocol],
  { stdio: ["ignore", "ignore", out] });
  for (let i = 0; i < 200; i++) {
    const found = (await readFile(log, "utf8")).match(/open (http:\/\/[0-9.:]+\/)/);
    if (found) return { url: found[1], child };
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  throw new Error(`the demo did not start: ${await readFile(log, "utf8")}`);
}

async function stop(child) {
  const ended = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await ended;
}

async function agentSaid(page, text) {
  await page.waitForFunction((t) => [...document.querySelectorAll(".msg.agent")]
    .some((m) => m.textContent.includes(t)), text);
}

async function statusOf(page, id) {
  return page.evaluate(async (id) => {
    for (const s of ["PENDING", "PROCESSING", "SHIPPED", "DELIVERED", "CANCELLED"]) {
      const list = await (await fetch("/api/orders?status=" + s)).json();
      if (list.some((o) => o.orderId === id)) return s;
    }
    return null;
  }, id);
}

await run.scenario(`the desk restarted while a confirmation waits (${protocol})`, async (page) => {
  let demo = await start("127.0.0.1:0", 1);
  try {
    await page.goto(demo.url);
    await page.waitForSelector('body[data-ready="true"]');
    await page.fill("#chat-input", "cancel ORD-10002");
    await page.click("#chat-send");
    await agentSaid(page, "Waiting for your answer");
    await page.waitForSelector("#confirm[open]");
    const listen = new URL(demo.url).host;
    await stop(demo.child);
    demo = await start(listen, 2);
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    await page.waitForSelector("#inbox-badge:not([hidden])");
    await page.waitForSelector("#confirm[open]");
    if ((await statusOf(page, "ORD-10002")) !== "PENDING") throw new Error("cancelled before the answer");
    await page.click("#confirm-yes");
    await agentSaid(page, "Order ORD-10002 is cancelled");
    await page.waitForSelector("#inbox-badge", { state: "hidden" });
    if ((await statusOf(page, "ORD-10002")) !== "CANCELLED") throw new Error("not cancelled");
  } finally {
    await stop(demo.child);
  }
});

await run.finish();
