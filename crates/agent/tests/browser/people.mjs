// A desk with a people file, in headless Chromium: the page sends a browser that has not signed
// in to the sign-in page; a wrong password is refused there; Ana and Ben, each in a browser of
// their own, sign in; Ana's confirmation reaches Ana's page only, Ben's page shows none, and
// Ben cannot answer it through the API either (the inbox and the dialog's route both refuse, the
// order stays pending); Ana's answer cancels the order; signing out sends Ana back to the
// sign-in page.
// Usage: node people.mjs DESK_URL [LABEL]   (ana/ana-password and ben/ben-password in its
// people file)
import { accessible, launch, screenshot, statusOf } from "./harness.mjs";

const [url, label = "auto"] = process.argv.slice(2);
const run = await launch();

async function signIn(page, name, password) {
  await page.goto(url);
  await page.waitForURL("**/signin");
  await page.fill("#signin-name", name);
  await page.fill("#signin-password", password);
  await page.click("#signin-submit");
}

// The sign-in view at a phone's and a desktop's width: accessible (axe-core), photographed.
if (process.env.AXE_CORE && label === "2026-07-28") {
  for (const [width, height] of [[375, 812], [1280, 800]]) {
    await run.scenario(`the sign-in view at ${width} px is accessible (axe-core)`, async (page) => {
      await page.goto(url);
      await page.waitForURL("**/signin");
      await accessible(page, "sign-in");
      await screenshot(page, "sign-in");
    }, { width, height });
  }
}

await run.scenario(`a desk with people: each signs in and sees and answers only their own questions (${label})`, async (ana, context) => {
  await signIn(ana, "ana", "not-her-password");
  await ana.waitForSelector("#signin-error:not([hidden])");
  const refused = await ana.textContent("#signin-error");
  if (!refused.includes("do not match")) throw new Error(`the refusal says ${refused}`);
  await ana.fill("#signin-password", "ana-password");
  await ana.click("#signin-submit");
  await ana.waitForSelector('body[data-ready="true"]');
  const shown = await ana.textContent("#person");
  if (shown !== "Signed in as ana") throw new Error(`the page shows ${shown}`);

  const benContext = await context.browser().newContext();
  const ben = await benContext.newPage();
  ben.setDefaultTimeout(20000);
  await signIn(ben, "ben", "ben-password");
  await ben.waitForSelector('body[data-ready="true"]');

  await ana.fill("#chat-input", "cancel ORD-10002");
  await ana.click("#chat-send");
  await ana.waitForSelector("#confirm[open]");
  if (await ben.isVisible("#confirm")) throw new Error("Ben's page shows Ana's question");
  if (!(await ben.isHidden("#waiting"))) throw new Error("Ben's page shows a waiting question");
  if (!(await ben.isHidden("#inbox-badge"))) throw new Error("Ben's inbox shows a question");
  // Ana's question, by its id, through Ben's session: not in his inbox, not his to answer.
  const [question] = await ana.evaluate(async () => (await fetch("/api/inbox")).json());
  if (!question) throw new Error("Ana's inbox is empty");
  const tried = await ben.evaluate(async (id) => {
    const inbox = await (await fetch("/api/inbox")).json();
    const post = (path, body) => fetch(path + encodeURIComponent(id), {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    }).then((r) => r.status);
    return {
      listed: inbox.length,
      inbox: await post("/api/inbox/", { confirmed: true }),
      dialog: await post("/api/confirmations/", { secret: "guessed", confirmed: true }),
    };
  }, question.id);
  if (tried.listed !== 0 || tried.inbox !== 403 || tried.dialog !== 403) {
    throw new Error(`Ben reached Ana's question: ${JSON.stringify(tried)}`);
  }
  if (!(await ana.isVisible("#confirm"))) throw new Error("Ana's question was taken");
  if ((await statusOf(ana, "ORD-10002")) !== "PENDING") throw new Error("cancelled by Ben");
  await ana.click("#confirm-yes");
  await ana.waitForFunction(() => [...document.querySelectorAll(".msg.agent")]
    .some((m) => m.textContent.includes("Order ORD-10002 is cancelled")));
  if (await ben.isVisible("#confirm")) throw new Error("Ben's page showed a question");
  await benContext.close();

  await ana.click("#sign-out");
  await ana.waitForURL("**/signin");
  await ana.goto(url);
  await ana.waitForURL("**/signin");
});

await run.finish();
