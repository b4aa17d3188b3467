// The Support Desk page: status tabs and orders, the chat with its progress bar, and the
// confirmation dialog that answers the order service's questions.
"use strict";

// The desk's vocabulary (statuses, which may have a refund e-mail, the refund reasons, the
// names of the stream's events) is the desk's to decide: `GET /api/desk` fills it at start.
let vocabulary = { statuses: [], refundable: [], refundReasons: [], events: [] };
// This page's conversation: the desk makes its id (and this browser's session cookie) at start;
// the id alone opens nothing.
let conversationId = null;
const $ = (id) => document.getElementById(id);
const eur = new Intl.NumberFormat("en-IE", { style: "currency", currency: "EUR" });

// The status tab chosen is kept for this tab's reloads.
let status = sessionStorage.getItem("desk.status") || "SHIPPED";
let selected = null;
let secret = null;

// Theme: follows the OS until the person picks one.
function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  $("theme").textContent = theme === "dark" ? "☀" : "☾";
}
applyTheme(localStorage.getItem("theme") ||
  (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"));
$("theme").onclick = () => {
  const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
  localStorage.setItem("theme", next);
  applyTheme(next);
};

function renderTabs() {
  $("tabs").replaceChildren(...vocabulary.statuses.map((s) => {
    const b = document.createElement("button");
    b.textContent = s;
    b.dataset.status = s;
    b.setAttribute("aria-pressed", String(s === status));
    b.onclick = () => { status = s; sessionStorage.setItem("desk.status", s); selected = null; renderTabs(); loadOrders(); };
    return b;
  }));
}

// Each list request is numbered: an answer that arrives after a newer request was made (a slow
// list of the previous tab) is dropped, so the table always shows the tab that is selected.
let ordersRequest = 0;
let ordersSettled = 0;

async function loadOrders() {
  const mine = ++ordersRequest;
  document.body.dataset.ordersAsked = String(mine);
  try {
    await showOrders(mine);
  } finally {
    // How many list requests have been answered (shown or dropped), next to how many were
    // made (ordersAsked): tests wait for the two to meet.
    document.body.dataset.ordersSettled = String(++ordersSettled);
  }
}

async function showOrders(mine) {
  try {
    const res = await fetch("/api/orders?status=" + status);
    const orders = await res.json();
    if (mine !== ordersRequest) return;
    if (!res.ok) throw new Error(orders.message || res.statusText);
    $("banner").hidden = true;
    $("orders-heading").textContent = `Orders (${orders.length})`;
    $("order-list").replaceChildren(...orders.map((o) => {
      const li = document.createElement("li");
      li.dataset.orderId = o.orderId;
      li.innerHTML = `<b></b><span class="badge"></span><span></span><span></span>`;
      li.children[0].textContent = o.orderId;
      li.children[1].textContent = o.status;
      li.children[2].textContent = o.customer.name;
      li.children[3].textContent = eur.format(o.totalAmount);
      if (selected && selected.orderId === o.orderId) li.classList.add("selected");
      li.onclick = () => select(o);
      return li;
    }));
    if (selected) select(orders.find((o) => o.orderId === selected.orderId) || null);
  } catch (e) {
    if (mine !== ordersRequest) return;
    $("banner").textContent = "Could not reach order-service: " + e.message +
      ". Start it with `cargo run -p orders --bin order-service -- serve`.";
    $("banner").hidden = false;
  }
}

function select(order) {
  selected = order;
  $("detail").hidden = !order;
  $("about").hidden = !order;
  $("chat-input").placeholder = order ? `Where is ${order.orderId}?` : "Ask a question";
  for (const li of $("order-list").children) li.classList.toggle("selected", !!order && li.dataset.orderId === order.orderId);
  if (!order) return;
  $("about").textContent = `about ${order.orderId} ✕`;
  $("detail-title").textContent = `${order.orderId} · ${order.customer.name}`;
  $("detail-items").replaceChildren(...order.items.map((i) => {
    const tr = document.createElement("tr");
    tr.innerHTML = "<td></td><td></td><td></td>";
    tr.children[0].textContent = i.productName;
    tr.children[1].textContent = "×" + i.quantity;
    tr.children[2].textContent = eur.format(i.unitPrice);
    return tr;
  }));
  const s = order.shipment;
  $("detail-shipment").textContent = s ? `${s.carrier} ${s.trackingNumber}, due ${s.estimatedDelivery}` : "Not shipped yet";
  const refundable = vocabulary.refundable.includes(order.status);
  $("refund-open").disabled = !refundable;
  $("refund-hint").hidden = refundable;
}
$("about").onclick = () => select(null);

// `html` comes from the desk already rendered from Markdown and sanitised (raw HTML shown as
// text, links only to http(s) and mailto); everything else is set as text.
function say(role, text, html) {
  show(role, text, html);
  if (!role.includes("greeting")) remember(role, text, html);
}

// What this tab's conversation showed, kept in the tab's session storage so a reload shows it
// again (the last 200 messages).
function remember(role, text, html) {
  const kept = JSON.parse(sessionStorage.getItem("desk.transcript") || "[]");
  kept.push({ role, text, html: html || null });
  sessionStorage.setItem("desk.transcript", JSON.stringify(kept.slice(-200)));
}
function restoreTranscript() {
  for (const { role, text, html } of JSON.parse(sessionStorage.getItem("desk.transcript") || "[]")) {
    show(role, text, html);
  }
}

function show(role, text, html) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  if (html) {
    div.classList.add("rendered");
    div.innerHTML = html;
  } else {
    div.textContent = text;
  }
  $("messages").append(div);
  $("messages").scrollTop = $("messages").scrollHeight;
}

// The model's reply as it streams: one bubble, its HTML replaced by each `reply` event (the
// desk renders and sanitises it, like every reply), then by the chat's final answer. The
// number of updates each reply got is recorded for the browser test.
let growing = null;
let growingText = "";
const replyUpdates = [];
function growReply({ text, html }) {
  if (!growing) {
    growing = document.createElement("div");
    growing.className = "msg agent rendered streaming";
    $("messages").append(growing);
    replyUpdates.push(0);
  }
  growing.innerHTML = html;
  growingText = text;
  replyUpdates[replyUpdates.length - 1] += 1;
  document.body.dataset.replyUpdates = replyUpdates.join(",");
  $("messages").scrollTop = $("messages").scrollHeight;
}
// The final answer completes the growing bubble; an answer that is not its continuation (the
// person pressed Stop, or the desk gave up) is said apart, and the words so far stay.
function finishReply(text, html) {
  if (!growing) return say("agent", text, html);
  growing.classList.remove("streaming");
  const continues = text.startsWith(growingText.trim());
  if (continues) {
    if (html) growing.innerHTML = html; else growing.textContent = text;
    remember("agent", text, html);
  }
  growing = null;
  if (!continues) say("agent", text, html);
  $("messages").scrollTop = $("messages").scrollHeight;
}
function dropReply() {
  if (growing) growing.remove();
  growing = null;
}

async function greet() {
  try {
    const body = await (await fetch("/api/greeting")).json();
    say("agent greeting", body.reply, body.html);
  } catch (e) {
    say("error", "The agent is not reachable: " + e.message);
  }
}

// Every value shown is recorded (in order) for the browser test.
const progressSeen = [];
function setProgress(percent, server, message) {
  $("progress").hidden = percent === null;
  $("progress-bar").style.width = (percent || 0) + "%";
  $("progress-label").textContent = percent === null ? "" : percent + "%";
  // Which server works, and its own words for where it is ("40 of 87").
  $("progress-note").textContent = percent === null ? "" : server + (message ? ": " + message : "");
  if (percent !== null) progressSeen.push(percent);
  document.body.dataset.progressSeen = progressSeen.join(",");
}

// Whether this page is waiting for a chat request's answer (else a `done` event, after a
// reload, carries the reply); the runs whose reply is shown, so none is shown twice (the
// chat's answer and its `done` event may come in either order).
let inFlight = false;
const shownRuns = new Set();
function working(on) {
  $("chat-input").disabled = $("chat-send").disabled = on;
  $("chat-stop").hidden = !on;
}

$("chat-form").onsubmit = async (event) => {
  event.preventDefault();
  const message = $("chat-input").value.trim();
  if (!message || !conversationId || $("chat-send").disabled) return;
  say("user", message);
  $("chat-input").value = "";
  inFlight = true;
  working(true);
  setProgress(null);
  progressSeen.length = 0;
  try {
    const res = await fetch("/api/chat", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ conversationId, message, orderId: selected ? selected.orderId : null }),
    });
    const body = await res.json();
    if (res.ok && !shownRuns.has(body.run)) {
      shownRuns.add(body.run);
      finishReply(body.reply, body.html);
    } else if (!res.ok) {
      dropReply();
      say("error", body.message || res.statusText);
      // Nothing typed is lost: a message the desk refused goes back to the box to be mended.
      if (!$("chat-input").value) $("chat-input").value = message;
    }
  } catch (e) {
    dropReply();
    say("error", "The agent is not reachable: " + e.message);
    if (!$("chat-input").value) $("chat-input").value = message;
  } finally {
    inFlight = false;
    working(false);
    document.body.dataset.lastProgress = $("progress-label").textContent;
    loadOrders();
  }
};

$("chat-stop").onclick = (event) => {
  // Stop appears where Send was: the second click of a double-click on Send lands here, and
  // it is not a request to stop the message the first click sent.
  if (event.detail > 1) return;
  fetch("/api/chat/stop", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ conversationId, secret }),
  });
};

// Live events: progress and questions for this conversation.
let countdown = null;
function connectEvents() {
  const source = new EventSource("/api/events?conversationId=" + encodeURIComponent(conversationId));
  const handlers = {
    hello: (data) => {
      secret = data.secret;
      $("agent-state").textContent = "";
      // Opened again while a message is worked on (a reload): wait for its `done`.
      if (data.working && !inFlight) working(true);
      document.body.dataset.ready = "true";
    },
    done: (data) => {
      // Counted for the browser test, which judges a reply shown once after both came.
      document.body.dataset.doneEvents = String(Number(document.body.dataset.doneEvents || 0) + 1);
      // The chat request's own answer shows it (now, or already: each run is shown once).
      if (inFlight || shownRuns.has(data.run)) return;
      shownRuns.add(data.run);
      finishReply(data.text, data.html);
      working(false);
      loadOrders();
    },
    progress: (data) => setProgress(data.percent, data.server, data.message),
    // A tool call as a card: its server, tool and arguments, then its result.
    call: (data) => showCall(data),
    reply: (data) => growReply(data),
    // The dialog says which server asks.
    confirmation: (data) => ask(data, data.fields ? `${data.server} asks you to fill in a form` : `${data.server} asks you to confirm`),
    // A page of the server's own to open (a sign-in, say): opened only on the person's click.
    link: (data) => ask(data, `${data.server} asks you to open a page`),
    // Asked twice: before the model is given the request, and before its reply goes back.
    sampling: (data) => ask(data, `${data.server} and the model: approve?`),
    closed: (data) => closed(data.id, data.answeredElsewhere, data.withdrawn),
    signin: (data) => showSignIn(data),
    inbox: (data) => showInbox(data.questions),
    // A task that waited for the person ended: its result, in the conversation.
    said: (data) => { say("agent", data.text, data.html); loadOrders(); },
    signinended: (data) => endSignIn(data),
    // A server's log message during a call of this conversation, at its level.
    log: (data) => say("log", `${data.server} (${data.level}): ${data.text}`),
  };
  for (const name of vocabulary.events) {
    const handle = handlers[name];
    if (!handle) { console.warn("the desk sends events this page does not show:", name); continue; }
    source.addEventListener(name, (e) => handle(JSON.parse(e.data)));
  }
  source.onerror = () => { $("agent-state").textContent = ": agent not running"; };
}

// A tool call's card in the conversation: what was called (the arguments folded away), and
// its result once it comes, marked when the tool failed.
function showCall({ id, call, result, isError }) {
  let card = [...document.querySelectorAll("#messages .call")].find((c) => c.dataset.callId === id);
  if (!card) {
    card = document.createElement("details");
    card.className = "msg call";
    card.dataset.callId = id;
    const summary = document.createElement("summary");
    summary.textContent = `${call.server} · ${call.tool}`;
    const args = document.createElement("pre");
    args.className = "arguments";
    args.textContent = JSON.stringify(call.arguments, null, 2);
    const outcome = document.createElement("div");
    outcome.className = "result";
    outcome.textContent = "Running…";
    card.append(summary, args, outcome);
    $("messages").append(card);
  }
  if (result !== undefined) {
    card.querySelector(".result").textContent = result;
    card.classList.toggle("failed", !!isError);
    card.querySelector("summary").textContent = `${call.server} · ${call.tool}${isError ? " (failed)" : " ✓"}`;
  }
  $("messages").scrollTop = $("messages").scrollHeight;
}

// A server the desk talks to asks the person to sign in: a link per server, opened in a new
// tab; the authorization server sends that tab back to the desk, which takes it from there.
function showSignIn({ server, url }) {
  // The desk's own start of the sign-in (it notes this browser, then sends it on).
  if (!url.startsWith("/oauth/start?")) return;
  let link = [...document.querySelectorAll("#sign-ins a")].find((a) => a.dataset.server === server);
  if (!link) {
    link = document.createElement("a");
    link.dataset.server = server;
    link.target = "_blank";
    link.rel = "noopener";
    link.className = "sign-in";
    link.textContent = "Sign in to " + server;
    $("sign-ins").append(link);
  }
  link.href = url;
  $("sign-ins").hidden = false;
}

function endSignIn({ server, completed }) {
  document.querySelectorAll("#sign-ins a").forEach((a) => { if (a.dataset.server === server) a.remove(); });
  $("sign-ins").hidden = !document.querySelector("#sign-ins a");
  if (completed) say("agent", "Signed in to " + server + ".");
}

// The open question, if any. Escape (or "Later") only minimises it to the banner at the top,
// which reopens it: the tool is still waiting, so the question must not get lost.
let open = null;

function showWaiting(visible) {
  $("waiting").hidden = !visible;
}

// A question closed without an answer from this page: expired, or answered at another desk of
// the person's (the terminal), where the dialog just goes.
function closed(id, answeredElsewhere, withdrawn) {
  if (!open || open.id !== id) return;
  forgetPutAway(open);
  if (withdrawn) return expire(`${open.server} withdrew the question: the call that asked it ended, and nothing was changed.`);
  if (!answeredElsewhere) return expire();
  clearInterval(countdown);
  showWaiting(false);
  open = null;
  $("confirm").close();
}

function expire(why) {
  clearInterval(countdown);
  $("confirm-countdown").textContent = why || "The question expired and the tool has stopped waiting.";
  $("confirm-yes").disabled = $("confirm-no").disabled = $("confirm-cancel").disabled = true;
  $("confirm-later").hidden = true;
  $("confirm-close").hidden = false;
  showWaiting(false);
  open = null;
}

function minimise() {
  $("confirm").close();
}

// However the dialog closes while its question is open (Escape, Later), the banner keeps it.
$("confirm").addEventListener("close", () => {
  if (open) showWaiting(true);
});
// A question put away with Later stays put away when it is asked again (a reload, the desk
// restarted and asking it anew): its banner is shown, not its dialog. Known by who asks and
// what, since a question asked again after a restart has a new id.
const putAway = new Set(JSON.parse(sessionStorage.getItem("desk.putAway") || "[]"));
const questionKey = (q) => `${q.server}\n${q.message}`;
// Kept for this tab's reloads: the newest 50.
const savePutAway = () => sessionStorage.setItem("desk.putAway", JSON.stringify([...putAway].slice(-50)));
function forgetPutAway(q) {
  if (putAway.delete(questionKey(q))) savePutAway();
}
$("confirm-later").onclick = () => {
  if (open) {
    putAway.add(questionKey(open));
    savePutAway();
  }
  minimise();
};
$("waiting-open").onclick = () => {
  showWaiting(false);
  if (open) $("confirm").showModal();
};

function ask(question, title) {
  const dialog = $("confirm");
  open = question;
  $("confirm-title").textContent = title;
  $("confirm-message").textContent = question.message;
  // The call that asks: what a yes will do.
  $("confirm-call").hidden = !question.call;
  $("confirm-call").textContent = question.call ? `The call: ${callLine(question.call)}` : "";
  $("waiting-text").textContent = `A question is waiting for your answer: ${question.message}`;
  $("confirm-note").value = "";
  $("confirm-error").hidden = true;
  // A form of the server's own: its fields instead of the note; a link: where it leads, the
  // whole address shown before anything opens.
  const fields = question.fields || [];
  $("confirm-fields").replaceChildren(...fields.map(fieldInput));
  $("confirm-note-label").hidden = fields.length > 0 || !!question.url;
  $("confirm-link").hidden = !question.url;
  $("confirm-link").textContent = question.url ? `It opens ${question.origin} in a new tab: ${question.url}` : "";
  $("confirm-yes").textContent = question.url ? `Open ${question.origin}` : fields.length ? "Send" : "Yes, do it";
  $("confirm-yes").className = question.url || fields.length ? "" : "danger";
  $("confirm-no").textContent = question.url || fields.length ? "Decline" : "No";
  $("confirm-cancel").hidden = !question.url;
  $("confirm-yes").disabled = $("confirm-no").disabled = $("confirm-cancel").disabled = false;
  $("confirm-later").hidden = false;
  $("confirm-close").hidden = true;
  $("confirm-close").onclick = () => dialog.close();
  let left = question.seconds;
  const tick = () => {
    if (left <= 0) {
      expire();
      return;
    }
    $("confirm-countdown").textContent = `${plural(left, "second")} left to answer`;
    $("waiting-left").textContent = `${plural(left, "second")} left`;
    left -= 1;
  };
  clearInterval(countdown);
  tick();
  countdown = setInterval(tick, 1000);
  const answer = async (confirmed, cancel = false) => {
    const body = { secret, confirmed, cancel, note: $("confirm-note").value };
    if (confirmed && fields.length) body.content = formValues(fields, $("confirm-fields"));
    let res;
    try {
      res = await fetch("/api/confirmations/" + encodeURIComponent(question.id), {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      });
    } catch (e) {
      // The desk is not reachable: nothing was answered, and the person is told so plainly;
      // the question stays open here, to answer again once the desk is back.
      $("confirm-error").textContent = "The desk did not get your answer: it is not reachable. Nothing was answered; answer again once it is back.";
      $("confirm-error").hidden = false;
      return;
    }
    // A form's answer the desk refused (a required field empty): the question still waits.
    if (res.status === 422) {
      $("confirm-error").textContent = (await res.json()).message;
      $("confirm-error").hidden = false;
      return;
    }
    if (!res.ok) {
      // Gone meanwhile (answered elsewhere, expired) or refused: said, never silently dropped.
      say("error", `Your answer was not taken: ${(await res.json().catch(() => ({}))).message || res.statusText}`);
    }
    forgetPutAway(question);
    clearInterval(countdown);
    open = null;
    showWaiting(false);
    dialog.close();
  };
  $("confirm-yes").onclick = () => {
    // The page opens in a new tab on this click, never before it, and never by the desk.
    if (question.url) {
      window.open(question.url, "_blank", "noopener,noreferrer");
      say("agent", `Opened ${question.origin} in a new tab; ${question.server} goes on once you finish there.`);
    }
    answer(true);
  };
  $("confirm-no").onclick = () => answer(false);
  $("confirm-cancel").onclick = () => answer(false, true);
  if (putAway.has(questionKey(question))) {
    showWaiting(true);
    return;
  }
  showWaiting(false);
  dialog.showModal();
}

// The person's inbox: every open question of theirs, in any tab (or the terminal). The badge
// shows from every view; answering one anywhere takes it off everywhere.
let inboxItems = [];
// When the inbox last came: its ages and times left move on from there, a second at a time.
let inboxAt = Date.now();
function showInbox(questions) {
  inboxItems = questions;
  inboxAt = Date.now();
  $("inbox-badge").textContent = `${questions.length} waiting`;
  // The banner shows this tab's question; the others waiting are counted beside it.
  $("waiting-more").textContent = questions.length > 1 ? `(${questions.length - 1} more in your inbox)` : "";
  $("inbox-badge").hidden = questions.length === 0;
  document.body.dataset.inbox = String(questions.length);
  // This tab's own question was answered elsewhere: its dialog goes quietly.
  if (open && !questions.some((q) => q.id === open.id)) {
    clearInterval(countdown);
    open = null;
    showWaiting(false);
    if ($("confirm").open) $("confirm").close();
  }
  renderInbox();
  if (questions.length === 0 && $("inbox").open) $("inbox").close();
}
// One field of a server's form: a labelled input of its type (a choice as a select).
function fieldInput(field) {
  const label = document.createElement("label");
  label.className = "field";
  const title = document.createElement("span");
  title.textContent = field.title + (field.required ? " (required)" : "");
  let input;
  if (field.options) {
    input = document.createElement("select");
    const none = document.createElement("option");
    none.value = "";
    none.textContent = "Choose…";
    input.append(none, ...field.options.map((o) => Object.assign(document.createElement("option"), { value: o, textContent: o })));
  } else {
    input = document.createElement("input");
    input.type = field.type === "boolean" ? "checkbox" : field.type === "string" ? "text" : "number";
    if (field.type === "integer") input.step = "1";
  }
  input.dataset.field = field.name;
  input.dataset.type = field.type;
  label.append(title, input);
  if (field.description) {
    const about = document.createElement("small");
    about.textContent = field.description;
    label.append(about);
  }
  return label;
}

// What the person filled in, each value of its field's type (empty fields left out).
function formValues(fields, container) {
  const values = {};
  for (const input of container.querySelectorAll("[data-field]")) {
    const type = input.dataset.type;
    if (type === "boolean") values[input.dataset.field] = input.checked;
    else if (input.value === "") continue;
    else if (type === "number" || type === "integer") values[input.dataset.field] = Number(input.value);
    else values[input.dataset.field] = input.value;
  }
  return values;
}

// "1 second", "2 seconds".
function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// A tool call as one line: `orders · cancel_order(orderId: "ORD-10002")`.
function callLine(call) {
  const args = Object.entries(call.arguments || {}).map(([k, v]) => `${k}: ${JSON.stringify(v)}`);
  return `${call.server} · ${call.tool}(${args.join(", ")})`;
}
function renderInbox() {
  $("inbox-list").replaceChildren(...inboxItems.map((q) => {
    const li = document.createElement("li");
    li.dataset.questionId = q.id;
    li.innerHTML = `<div class="message"></div><div class="meta"></div>
      <div class="buttons"><button class="no" type="button">No</button><button class="yes danger" type="button">Yes, do it</button></div>`;
    li.querySelector(".message").textContent = `${q.server} asks: ${q.message}` + (q.call ? ` (${callLine(q.call)})` : "")
      + (q.url ? ` — a page at ${new URL(q.url).origin}: ${q.url}` : "");
    const fields = q.fields || [];
    if (fields.length) li.querySelector(".message").after(...fields.map(fieldInput));
    if (q.url || fields.length) {
      li.querySelector(".yes").textContent = q.url ? `Open ${new URL(q.url).origin}` : "Send";
      li.querySelector(".yes").classList.remove("danger");
      li.querySelector(".no").textContent = "Decline";
    }
    li.querySelector(".meta").textContent = ages(q);
    const answer = async (confirmed) => {
      li.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      const body = { confirmed };
      if (confirmed && fields.length) body.content = formValues(fields, li);
      const res = await fetch("/api/inbox/" + encodeURIComponent(q.id), {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      if (!res.ok) {
        li.dataset.refused = "yes";
        li.querySelector(".meta").textContent = (await res.json()).message;
        li.querySelectorAll("button").forEach((b) => { b.disabled = false; });
      }
    };
    li.querySelector(".yes").onclick = () => {
      if (q.url) window.open(q.url, "_blank", "noopener,noreferrer");
      answer(true);
    };
    li.querySelector(".no").onclick = () => answer(false);
    return li;
  }));
}
// "asked 1 minute 5 seconds ago, 55 seconds left", as it is now.
function ages(q) {
  const moved = Math.floor((Date.now() - inboxAt) / 1000);
  return `asked ${duration(q.waitedSeconds + moved)} ago, ${duration(Math.max(0, q.secondsLeft - moved))} left`;
}
function duration(seconds) {
  const minutes = Math.floor(seconds / 60);
  return minutes ? `${plural(minutes, "minute")} ${plural(seconds % 60, "second")}` : plural(seconds, "second");
}
// The open inbox's ages move; a line showing why an answer was not taken keeps its words.
setInterval(() => {
  if (!$("inbox").open) return;
  for (const li of $("inbox-list").children) {
    const q = inboxItems.find((item) => item.id === li.dataset.questionId);
    if (q && !li.dataset.refused) li.querySelector(".meta").textContent = ages(q);
  }
}, 1000);
$("inbox-badge").onclick = () => { renderInbox(); $("inbox").showModal(); };
$("inbox-close").onclick = () => $("inbox").close();

// A tool called by hand (no model): every server's tools, its arguments as JSON, the result
// in the conversation as what it is.
let toolsOffered = [];
$("by-hand").addEventListener("toggle", async () => {
  if (!$("by-hand").open) return;
  const res = await fetch("/api/tools");
  const body = await res.json();
  if (!res.ok) { $("tool-about").textContent = body.message; return; }
  toolsOffered = body;
  $("tool-name").replaceChildren(...toolsOffered.map((t) => Object.assign(document.createElement("option"),
    { value: t.name, textContent: `${t.server} · ${t.name}` })));
  describeTool();
});
function describeTool() {
  const tool = toolsOffered.find((t) => t.name === $("tool-name").value);
  if (!tool) return;
  $("tool-about").textContent = tool.description;
  const props = Object.keys((tool.inputSchema && tool.inputSchema.properties) || {});
  $("tool-arguments").value = JSON.stringify(Object.fromEntries(props.map((p) => [p, ""])));
}
$("tool-name").onchange = describeTool;
$("tool-call").onclick = async () => {
  let args;
  try { args = JSON.parse($("tool-arguments").value || "{}"); } catch (e) { args = null; }
  if (!args || typeof args !== "object" || Array.isArray(args)) {
    $("tool-error").textContent = "The arguments are not a JSON object.";
    $("tool-error").hidden = false;
    return;
  }
  $("tool-error").hidden = true;
  const name = $("tool-name").value;
  say("user", `Called ${name} ${JSON.stringify(args)}`);
  $("tool-call").disabled = true;
  try {
    const res = await fetch("/api/tools/call", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ conversationId, name, arguments: args }),
    });
    const body = await res.json();
    if (!res.ok) say("error", body.message);
    else say(body.isError ? "error" : "agent", `${name} ${body.isError ? "failed" : "returned"}: ${body.text}`);
  } finally {
    $("tool-call").disabled = false;
  }
};

// The folders of notes the desk searches: the notes' own first; a folder added is told to the
// filesystem server as a root, and its notes are searched too.
async function showFolders(body) {
  if (!body) {
    const res = await fetch("/api/folders");
    body = await res.json();
    if (!res.ok) { $("folder-hint").textContent = body.message; $("folder-hint").hidden = false; $("folder-change").hidden = true; return; }
  }
  $("folder-change").hidden = !body.mayChange;
  $("folder-hint").hidden = body.mayChange;
  $("folder-hint").textContent = body.mayChange ? "" : "On a desk with people the folders are everyone's: they change at the desk's terminal.";
  $("folder-list").replaceChildren(...body.folders.map((folder, i) => {
    const li = document.createElement("li");
    li.textContent = folder + (i === 0 ? " (the desk's own notes)" : " ");
    if (i > 0 && body.mayChange) {
      const remove = Object.assign(document.createElement("button"), { type: "button", textContent: "Remove" });
      remove.setAttribute("aria-label", `Remove ${folder}`);
      remove.onclick = () => changeFolder("remove", folder);
      li.append(remove);
    }
    return li;
  }));
}
async function changeFolder(action, path) {
  const res = await fetch("/api/folders", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ action, path }),
  });
  const body = await res.json();
  $("folder-error").hidden = res.ok;
  if (!res.ok) { $("folder-error").textContent = body.message; return; }
  $("folder-path").value = "";
  showFolders({ folders: body.folders, mayChange: true });
}
$("folders").addEventListener("toggle", () => { if ($("folders").open) showFolders(); });
$("folder-add").onclick = () => changeFolder("add", $("folder-path").value.trim());

// Refund email.
function renderReasons() {
  $("refund-chips").replaceChildren(...vocabulary.refundReasons.map((r) => {
    // A button, so the reasons are reached and chosen by keyboard too.
    const chip = document.createElement("button");
    chip.type = "button";
    chip.className = "chip";
    chip.textContent = r;
    chip.onclick = () => { $("refund-reason").value = r; $("refund-reason").focus(); };
    return chip;
  }));
}
$("refund-open").onclick = async () => {
  $("refund-text").textContent = "";
  // The reasons are the order service's: asked again when the page loaded before it was reached.
  if (!vocabulary.refundReasons.length) {
    const again = await fetch("/api/desk");
    if (again.ok) { vocabulary = await again.json(); renderReasons(); }
  }
  $("refund").showModal();
};
$("refund-close").onclick = () => $("refund").close();
$("refund-copy").onclick = () => navigator.clipboard && navigator.clipboard.writeText($("refund-text").textContent);
$("refund-draft").onclick = async () => {
  const res = await fetch("/api/refund-email", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ orderId: selected.orderId, reason: $("refund-reason").value.trim() || vocabulary.refundReasons[0] || "" }),
  });
  if (res.status === 404) { $("refund-text").textContent = "The refund endpoint is not available."; return; }
  $("refund-text").textContent = (await res.json()).reply;
};

// A conversation of this browser's session, made by the desk.
// Who is signed in (a desk with people), with a way out.
async function showPerson() {
  const me = await (await fetch("/api/me")).json();
  if (!me.people || !me.person) return;
  $("person").textContent = "Signed in as " + me.person;
  $("person").hidden = $("sign-out").hidden = false;
}
$("sign-out").onclick = async () => {
  await fetch("/api/sign-out", { method: "POST" });
  sessionStorage.clear();
  location.href = "/signin";
};

// A reload goes on with the tab's conversation (the desk checks it is this browser's), its
// messages shown again and its open question asked again.
async function startConversation() {
  const res = await fetch("/api/conversations", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ conversationId: sessionStorage.getItem("desk.conversation") }),
  });
  const body = await res.json();
  // A desk with people: this browser must sign in first.
  if (res.status === 401 && body.signIn) {
    location.href = body.signIn;
    return new Promise(() => {});
  }
  if (!res.ok) throw new Error(body.message || res.statusText);
  conversationId = body.conversationId;
  showPerson();
  sessionStorage.setItem("desk.conversation", conversationId);
  if (body.resumed) restoreTranscript();
  else sessionStorage.removeItem("desk.transcript");
}

(async () => {
  vocabulary = await (await fetch("/api/desk")).json();
  renderTabs();
  renderReasons();
  loadOrders();
  await greet();
  try {
    await startConversation();
    connectEvents();
  } catch (e) {
    say("error", "The desk could not start a conversation: " + e.message);
  }
})();
