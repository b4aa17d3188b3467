// A scripted fake of OpenAI's streaming chat-completions API for the browser test of streamed
// replies: it speaks the real wire format (chat.completion.chunk events, then [DONE]) over HTTP
// on a free loopback port, and prints "ready PORT" once it listens.
//   - "write a long story": 400 words, 50 ms apart (20 s), unless the request is dropped;
//   - anything else: a short Markdown reply, a word every 120 ms.
// GET /dropped answers {"at": epoch ms} once a streamed request was dropped before its end
// (the desk's Stop), else {"at": null}.
import http from "node:http";

let droppedAt = null;
const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/dropped") {
    res.writeHead(200, { "Content-Type": "application/json" });
    return res.end(JSON.stringify({ at: droppedAt }));
  }
  if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
    res.writeHead(404);
    return res.end();
  }
  let body = "";
  req.on("data", (chunk) => { body += chunk; });
  req.on("end", () => {
    const request = JSON.parse(body);
    const last = request.messages[request.messages.length - 1];
    const long = String(last.content || "").includes("write a long story");
    const words = long
      ? Array.from({ length: 400 }, (_, i) => `word${i} `)
      : ["**Hello** ", "there, ", "I ", "am ", "a ", "model ", "writing ", "this ", "reply ", "slowly."];
    const pause = long ? 50 : 120;
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    let sent = 0;
    let finished = false;
    const timer = setInterval(() => {
      if (sent < words.length) {
        const chunk = { id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: words[sent] } }] };
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        sent += 1;
        return;
      }
      clearInterval(timer);
      finished = true;
      res.end("data: [DONE]\n\n");
    }, pause);
    res.on("close", () => {
      clearInterval(timer);
      if (!finished) {
        droppedAt = Date.now();
        console.log(`request cancelled after ${sent} of ${words.length} words`);
      }
    });
  });
});
server.listen(0, "127.0.0.1", () => console.log(`ready ${server.address().port}`));
