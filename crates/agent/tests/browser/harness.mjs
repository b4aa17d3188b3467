// What the browser tests share: Debian's Chromium, headless, through playwright-core; each
// scenario in a fresh browser context, counted, with a screenshot when it fails; and the
// summary line scripts/test counts ("browser: N passed, M failed").
const { chromium } = await import(process.env.PLAYWRIGHT_CORE || "playwright-core");

export async function launch() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  let passed = 0;
  let failed = 0;
  // $BROWSER_LABEL names the setup when one test runs against several.
  const label = process.env.BROWSER_LABEL ? `${process.env.BROWSER_LABEL}: ` : "";
  return {
    // Run `body(page, context)` in a new context; a thrown error fails the scenario.
    async scenario(name, body, viewport = { width: 1300, height: 800 }) {
      const context = await browser.newContext({ viewport });
      const page = await context.newPage();
      page.setDefaultTimeout(20000);
      try {
        await body(page, context);
        console.log(`ok    browser: ${label}${name}`);
        passed += 1;
      } catch (error) {
        console.log(`FAIL  browser: ${label}${name}: ${error.message.split("\n")[0]}`);
        await page.screenshot({ path: `${process.env.RESULTS || "."}/${(label + name).replace(/\W+/g, "-")}.png` }).catch(() => {});
        failed += 1;
      } finally {
        await context.close();
      }
    },
    // Print the summary and exit with its verdict.
    async finish() {
      await browser.close();
      console.log(`browser: ${passed} passed, ${failed} failed`);
      process.exit(failed === 0 ? 0 : 1);
    },
  };
}

// Wait until the agent has said something containing `text` in the chat.
export async function agentSaid(page, text) {
  await page.waitForFunction((t) => [...document.querySelectorAll(".msg.agent")]
    .some((m) => m.textContent.includes(t)), text);
}

// The status of order `id`, read through the desk's own API (the tab it is listed in).
export async function statusOf(page, id) {
  return page.evaluate(async (id) => {
    for (const s of ["PENDING", "PROCESSING", "SHIPPED", "DELIVERED", "CANCELLED"]) {
      const list = await (await fetch("/api/orders?status=" + s)).json();
      if (list.some((o) => o.orderId === id)) return s;
    }
    return null;
  }, id);
}

// axe-core (pinned in tools/node, at $AXE_CORE) run on the page as it is now: every serious
// or critical violation named, with the elements it was found on; none is a pass.
export async function accessible(page, view) {
  if (!process.env.AXE_CORE) throw new Error("AXE_CORE names no axe-core to run");
  if (!(await page.evaluate(() => typeof window.axe !== "undefined"))) {
    await page.addScriptTag({ path: process.env.AXE_CORE });
  }
  const found = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ["violations"] });
    return result.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join(", ")}`);
  });
  if (found.length) throw new Error(`${view}: ${found.join("; ")}`);
}

// A screenshot of the page as it is now, for people to look at (never compared):
// $RESULTS/screenshots/VIEW-WIDTH.png.
export async function screenshot(page, view) {
  const width = page.viewportSize().width;
  const dir = `${process.env.RESULTS || "."}/screenshots`;
  const { mkdir } = await import("node:fs/promises");
  await mkdir(dir, { recursive: true });
  await page.screenshot({ path: `${dir}/${view}-${width}.png`, fullPage: true });
}
