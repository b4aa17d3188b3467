// The desk restarted while a confirmation waits, in headless Chromium: the demo (desk and order
// service in one process, tasks on by default) is started on files of its own; the page asks to
// cancel an order and the question waits in the order service's task; the demo is stopped
// (SIGTERM, as Ctrl-C) and started again on the same files and port; the reloaded page has the
// question back in its inbox (a Yes clicked while it was down was said not to have arrived, and
// the question put away with Later stays put away), answers it, and the order is cancelled once. Then the
// terminal (`support-agent cli` on the same database) answers a page's question: the page's
// dialog closes and its inbox empties, and the order is cancelled; and the other way: a question
// asked at the terminal waits in the page's inbox and is answered there. Two desks on one host
// keep their own sessions in one browser.
// Usage: node restart.mjs SUPPORT_AGENT DATA_DIR [PROTOCOL]
import { spawn } from "node:child_process";
import { mkdirSync, openSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { agentSaid, launch, statusOf } from "./harness.mjs";

const [binary, dir, protocol = "auto"] = process.argv.slice(2);
const run = await launch();

// Start the demo listening on `listen`; resolves with its URL (and its order service's MCP
// endpoint) once it says where.
async function start(listen, n, data = dir) {
  const log = `${dir}/demo-${n}.log`;
  const out = openSync(log, "w");
  const child = spawn(binary, ["demo", "--listen", listen, "--orders-listen", "127.0.0.1:0",
    "--database", `sqlite://${data}/orders.sqlite`, "--no-knowledge-base", "--protocol", protocol],
  { stdio: ["ignore", "ignore", out] });
  for (let i = 0; i < 200; i++) {
    const text = await readFile(log, "utf8");
    const found = text.match(/open (http:\/\/[0-9.:]+\/)/);
    const orders = text.match(/order-service listening on (http:\/\/[0-9.:]+)/);
    if (found && orders) return { url: found[1], orders: `${orders[1]}/mcp`, child };
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
    // Yes clicked while the desk is down: the page says plainly that nothing was answered, and
    // the question stays open. Put away with Later, it stays put away after the restart.
    await page.click("#confirm-yes");
    await page.waitForSelector("#confirm-error:not([hidden])");
    const said = await page.textContent("#confirm-error");
    if (!said.includes("did not get your answer")) throw new Error(`the page said ${said}`);
    if (!(await page.evaluate(() => document.querySelector("#confirm").open))) throw new Error("the dialog closed");
    await page.click("#confirm-later");
    demo = await start(listen, 2);
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    await page.waitForSelector("#inbox-badge:not([hidden])");
    await page.waitForSelector("#waiting:not([hidden])");
    if (await page.evaluate(() => document.querySelector("#confirm").open)) throw new Error("a question put away with Later opened again");
    if ((await statusOf(page, "ORD-10002")) !== "PENDING") throw new Error("cancelled before the answer");
    await page.click("#waiting-open");
    await page.waitForSelector("#confirm[open]");
    await page.click("#confirm-yes");
    await agentSaid(page, "Order ORD-10002 is cancelled");
    await page.waitForSelector("#inbox-badge", { state: "hidden" });
    if ((await statusOf(page, "ORD-10002")) !== "CANCELLED") throw new Error("not cancelled");
  } finally {
    await stop(demo.child);
  }
});

// The terminal: `support-agent cli` on the demo's database, its screen read as it comes.
function terminal(orders) {
  const child = spawn(binary, ["cli", "--orders", orders, "--database", `sqlite://${dir}/desk.sqlite`,
    "--no-knowledge-base", "--protocol", protocol, "--log-file", `${dir}/cli.log`],
  { stdio: ["pipe", "pipe", "inherit"] });
  let screen = "";
  child.stdout.on("data", (chunk) => { screen += chunk.toString(); });
  return {
    child,
    async shows(text) {
      for (let i = 0; i < 200 && !screen.includes(text); i++) await new Promise((r) => setTimeout(r, 100));
      if (!screen.includes(text)) throw new Error(`the terminal never showed "${text}": ${screen}`);
    },
    type(line) { child.stdin.write(line + "\n"); },
  };
}

await run.scenario(`a page's question answered at the terminal leaves the page (${protocol})`, async (page) => {
  const demo = await start("127.0.0.1:0", 3);
  let cli;
  try {
    await page.goto(demo.url);
    await page.waitForSelector('body[data-ready="true"]');
    await page.fill("#chat-input", "cancel ORD-10008");
    await page.click("#chat-send");
    await agentSaid(page, "Waiting for your answer");
    await page.waitForSelector("#confirm[open]");
    await page.waitForSelector("#inbox-badge:not([hidden])");
    cli = terminal(demo.orders);
    await cli.shows("Type 'yes' to confirm");
    cli.type("yes");
    await cli.shows("Order ORD-10008 is cancelled");
    await page.waitForFunction(() => !document.querySelector("#confirm").open);
    await page.waitForSelector("#inbox-badge", { state: "hidden" });
    await agentSaid(page, "Order ORD-10008 is cancelled");
    if ((await statusOf(page, "ORD-10008")) !== "CANCELLED") throw new Error("not cancelled");
    cli.type("quit");
  } finally {
    if (cli) cli.child.kill("SIGTERM");
    await stop(demo.child);
  }
});

await run.scenario(`a question asked at the terminal waits in the page's inbox, and is answered there (${protocol})`, async (page) => {
  const demo = await start("127.0.0.1:0", 4);
  let cli;
  try {
    await page.goto(demo.url);
    await page.waitForSelector('body[data-ready="true"]');
    cli = terminal(demo.orders);
    await cli.shows("support desk");
    cli.type("cancel ORD-10009");
    await cli.shows("Type 'yes' to confirm");
    // The page's badge counts it (the terminal's user is this desk's one person), and its inbox
    // answers it: no dialog opens on the page for a question it did not ask.
    await page.waitForSelector("#inbox-badge:not([hidden])");
    if ((await page.textContent("#inbox-badge")) !== "1 waiting") throw new Error(await page.textContent("#inbox-badge"));
    if (await page.isVisible("#confirm")) throw new Error("the page opened a dialog for the terminal's question");
    await page.click("#inbox-badge");
    const item = page.locator("#inbox-list li").first();
    const text = await item.textContent();
    if (!text.includes("Cancel order ORD-10009")) throw new Error(`the inbox lists ${text}`);
    await item.locator("button.yes").click();
    await page.waitForSelector("#inbox-badge", { state: "hidden" });
    await cli.shows("Order ORD-10009 is cancelled");
    if ((await statusOf(page, "ORD-10009")) !== "CANCELLED") throw new Error("not cancelled");
    cli.type("quit");
  } finally {
    if (cli) cli.child.kill("SIGTERM");
    await stop(demo.child);
  }
});

// Two desks on one host, in one browser: cookies ignore the port, so each desk names its
// session cookie after its own port; opening the second leaves the first signed in.
await run.scenario(`two desks on one host keep their own sessions (${protocol})`, async (page, context) => {
  const folders = [`${dir}/first`, `${dir}/second`];
  folders.forEach((f) => mkdirSync(f, { recursive: true }));
  const first = await start("127.0.0.1:0", 5, folders[0]);
  let second;
  try {
    await page.goto(first.url);
    await page.waitForSelector('body[data-ready="true"]');
    second = await start("127.0.0.1:0", 6, folders[1]);
    const other = await context.newPage();
    await other.goto(second.url);
    await other.waitForSelector('body[data-ready="true"]');
    const names = (await context.cookies()).map((c) => c.name).sort();
    if (names.length !== 2 || names[0] === names[1]) throw new Error(`the desks' cookies: ${names.join(", ")}`);
    // Each page still acts in its own desk: a message in each is answered there.
    for (const p of [page, other]) {
      await p.fill("#chat-input", "where is ORD-10001?");
      await p.click("#chat-send");
      await agentSaid(p, "ORD-10001");
    }
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    const restored = await page.evaluate(() => [...document.querySelectorAll(".msg.user")].map((m) => m.textContent));
    if (!restored.includes("where is ORD-10001?")) throw new Error(`the first desk's conversation after the second opened: ${restored}`);
  } finally {
    if (second) await stop(second.child);
    await stop(first.child);
  }
});

await run.finish();
