// The page's behaviour: a chat with the model, and the typed-value playground. Everything goes
// through the server's public API (/v1/chat/completions streamed, with Typeset's
// `typeset_trace` for the playground; /grammar/automaton for the picture). Text from the model
// is only ever set as text, never as markup.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);

  // MARK: The API

  // The key is kept for this tab's session only (not on a shared machine's disk).
  const keyInput = $("api-key");
  keyInput.value = sessionStorage.getItem("typeset.apiKey") || "";
  keyInput.addEventListener("change", () => {
    sessionStorage.setItem("typeset.apiKey", keyInput.value);
    showModel();
  });

  function headers() {
    const result = { "Content-Type": "application/json" };
    if (keyInput.value) result.Authorization = `Bearer ${keyInput.value}`;
    return result;
  }

  async function failure(response) {
    try {
      const body = await response.json();
      if (body && body.error && body.error.message) return new Error(body.error.message);
    } catch (_) { /* not JSON */ }
    return new Error(`the server answered ${response.status} ${response.statusText}`);
  }

  async function postJSON(path, body) {
    const response = await fetch(path, { method: "POST", headers: headers(), body: JSON.stringify(body) });
    if (!response.ok) throw await failure(response);
    return response.json();
  }

  // The events of a server-sent event stream, parsed, until `data: [DONE]` (lines may end
  // with CR LF, LF or CR); a stream that ends before it was cut short.
  async function* serverEvents(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) throw new Error("the connection closed before the reply was complete");
        buffer += decoder.decode(value, { stream: true });
        // A CR at the end may be the first half of a CR LF: it waits for the next read.
        const settled = buffer.endsWith("\r") ? buffer.length - 1 : buffer.length;
        buffer = buffer.slice(0, settled).replace(/\r\n?/g, "\n") + buffer.slice(settled);
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split("\n").filter((line) => line.startsWith("data:"))
            .map((line) => line.slice(5).replace(/^ /, "")).join("\n");
          if (!data) continue;
          if (data === "[DONE]") return;
          yield JSON.parse(data);
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  // Streams a chat completion, calling `onChunk` with each chunk; throws the server's error.
  async function streamChat(body, onChunk, signal) {
    const response = await fetch("/v1/chat/completions", {
      method: "POST", headers: headers(), body: JSON.stringify({ ...body, stream: true }), signal,
    });
    if (!response.ok) throw await failure(response);
    for await (const chunk of serverEvents(response)) {
      if (chunk.error) throw new Error(chunk.error.message);
      onChunk(chunk);
    }
  }

  function number(input, fallback) {
    const value = Number(input.value);
    return input.value === "" || Number.isNaN(value) ? fallback : value;
  }

  // MARK: The model's name

  async function showModel() {
    const label = $("model");
    for (;;) {
      try {
        const response = await fetch("/v1/models", { headers: headers() });
        if (response.status === 401) { label.textContent = "API key needed (top right)"; return; }
        if (response.status === 503) { label.textContent = "model loading…"; await new Promise((done) => setTimeout(done, 1000)); continue; }
        if (!response.ok) throw await failure(response);
        const body = await response.json();
        const model = body.data[0];
        label.textContent = `${model.id} · context ${model.meta.context_length.toLocaleString("en-US")} tokens`;
        return;
      } catch (error) {
        label.textContent = `server unreachable (${error.message})`;
        return;
      }
    }
  }

  // MARK: Tabs

  const tabs = [...document.querySelectorAll(".tabs button")];
  tabs.forEach((tab, index) => {
    tab.addEventListener("click", () => selectTab(tab.dataset.panel));
    // The arrow keys move between the tabs, as in any tab list.
    tab.addEventListener("keydown", (event) => {
      if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
      const next = tabs[(index + (event.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
      selectTab(next.dataset.panel);
      next.focus();
    });
  });
  function selectTab(name) {
    for (const tab of tabs) {
      const selected = tab.dataset.panel === name;
      tab.setAttribute("aria-selected", String(selected));
      tab.tabIndex = selected ? 0 : -1;
      $(`panel-${tab.dataset.panel}`).hidden = !selected;
    }
    if (location.hash !== `#${name}`) history.replaceState(null, "", `#${name}`);
  }
  // The address names the tab (#chat, #playground): a link or the back button opens it.
  function showTabOfAddress() { selectTab(location.hash === "#playground" ? "playground" : "chat"); }
  window.addEventListener("hashchange", showTabOfAddress);
  if (location.hash) showTabOfAddress();

  // MARK: Chat

  const chatLog = $("chat-log");
  let conversation = [];
  let chatAbort = null;

  function messageElement(role, text) {
    const wrapper = document.createElement("div");
    wrapper.className = `message ${role}`;
    const name = document.createElement("div");
    name.className = "role";
    name.textContent = role === "user" ? "You" : "Model";
    const body = document.createElement("div");
    body.className = "text";
    body.textContent = text;
    wrapper.append(name, body);
    chatLog.append(wrapper);
    chatLog.scrollTop = chatLog.scrollHeight;
    return wrapper;
  }

  async function sendChat() {
    const input = $("chat-input");
    const text = input.value.trim();
    if (!text || chatAbort) return;
    input.value = "";
    chatLog.querySelector(".hint")?.remove();
    const history = conversation;   // "New chat" replaces it: this reply then belongs to none
    history.push({ role: "user", content: text });
    messageElement("user", text);
    const reply = messageElement("assistant", "");
    const body = reply.querySelector(".text");
    body.textContent = "…";
    let content = "";
    let reasoning = null;
    let timings = null;
    chatAbort = new AbortController();
    $("chat-stop").disabled = false;
    $("chat-send").disabled = true;
    chatLog.setAttribute("aria-busy", "true");
    try {
      await streamChat({
        messages: history,
        temperature: number($("chat-temperature"), 0.7),
        max_tokens: number($("chat-max-tokens"), 512),
      }, (chunk) => {
        if (chunk.timings) timings = chunk.timings;
        const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
        if (!delta) return;
        if (delta.reasoning_content) {
          if (!reasoning) {
            const details = document.createElement("details");
            details.className = "reasoning";
            details.open = true;
            const summary = document.createElement("summary");
            summary.textContent = "Reasoning";
            reasoning = document.createElement("pre");
            details.append(summary, reasoning);
            reply.insertBefore(details, body);
          }
          reasoning.textContent += delta.reasoning_content;
        }
        if (delta.content) {
          content += delta.content;
          body.textContent = content;
        }
        chatLog.scrollTop = chatLog.scrollHeight;
      }, chatAbort.signal);
      if (!content) body.textContent = "(no text)";
      history.push({ role: "assistant", content });
      if (timings) {
        const meta = document.createElement("div");
        meta.className = "meta";
        meta.textContent = `${timings.predicted_n} tokens · ${timings.predicted_per_second.toFixed(1)} tokens/s · prompt ${timings.prompt_n} read, ${timings.cache_n} from the cache`;
        reply.append(meta);
      }
    } catch (error) {
      // A reply cut short keeps what it wrote; an unanswered message leaves the history, so
      // that the next one does not follow it (templates refuse two user turns in a row).
      if (content) {
        history.push({ role: "assistant", content });
      } else {
        history.pop();
      }
      if (error.name === "AbortError") {
        body.textContent = content ? `${content} [stopped]` : "[stopped]";
      } else {
        reply.classList.add("failed");
        body.textContent = content ? `${content}\n\nError: ${error.message}` : `Error: ${error.message}`;
      }
    } finally {
      chatLog.removeAttribute("aria-busy");
      chatAbort = null;
      $("chat-stop").disabled = true;
      $("chat-send").disabled = false;
    }
  }

  $("chat-form").addEventListener("submit", (event) => { event.preventDefault(); sendChat(); });
  $("chat-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); sendChat(); }
  });
  $("chat-stop").addEventListener("click", () => chatAbort && chatAbort.abort());
  $("chat-clear").addEventListener("click", () => {
    if (chatAbort) chatAbort.abort();
    conversation = [];
    chatLog.replaceChildren();
  });

  // MARK: Typed value

  const examples = [
    {
      name: "Event extraction",
      schema: {
        type: "object",
        properties: {
          name: { type: "string", description: "The event's name" },
          date: { type: "string", format: "date" },
          venue: { type: "string" },
          attendees: { type: "integer", minimum: 0 },
        },
        required: ["name", "date", "venue", "attendees"],
        additionalProperties: false,
      },
      prompt: "Extract the event: the Lisbon Coffee Festival is on 2025-05-17 at the Time Out Market, with about 300 attendees.",
    },
    {
      name: "Review classification",
      schema: {
        type: "object",
        properties: {
          sentiment: { enum: ["positive", "mixed", "negative"] },
          rating: { type: "integer", minimum: 1, maximum: 5 },
          pros: { type: "array", items: { type: "string", maxLength: 40 }, maxItems: 3 },
          cons: { type: "array", items: { type: "string", maxLength: 40 }, maxItems: 3 },
        },
        required: ["sentiment", "rating", "pros", "cons"],
        additionalProperties: false,
      },
      prompt: "Classify this review: \"The grinder is quiet and the burrs are excellent, but the hopper is small and it jams with oily beans.\"",
    },
    {
      name: "Contact card",
      schema: {
        type: "object",
        properties: {
          name: { type: "string" },
          email: { type: "string", pattern: "^[a-z0-9.]+@[a-z0-9-]+\\.[a-z]{2,}$" },
          phone: { anyOf: [{ type: "string", pattern: "^\\+[0-9 ]{7,16}$" }, { type: "null" }] },
          company: { type: "string" },
        },
        required: ["name", "email", "phone", "company"],
        additionalProperties: false,
      },
      prompt: "From this signature, give the contact: \"Maria Okafor, Head of Procurement, Brightline Foods, maria.okafor@brightline.io\"",
    },
  ];

  const exampleSelect = $("value-example");
  examples.forEach((example, index) => exampleSelect.append(new Option(example.name, String(index))));
  function showExample(index) {
    $("value-schema").value = JSON.stringify(examples[index].schema, null, 2);
    $("value-prompt").value = examples[index].prompt;
  }
  exampleSelect.addEventListener("change", () => showExample(Number(exampleSelect.value)));
  showExample(0);

  // The automaton's picture, with its zoom.
  let automatonLayout = null;
  let automatonScale = 1;
  function applyZoom() {
    if (!automatonLayout) return;
    const svg = $("automaton");
    svg.setAttribute("width", Math.round(automatonLayout.width * automatonScale));
    svg.setAttribute("height", Math.round(automatonLayout.height * automatonScale));
  }
  $("automaton-zoom-in").addEventListener("click", () => { automatonScale = Math.min(3, automatonScale * 1.25); applyZoom(); });
  $("automaton-zoom-out").addEventListener("click", () => { automatonScale = Math.max(0.1, automatonScale / 1.25); applyZoom(); });
  $("automaton-fit").addEventListener("click", () => {
    if (!automatonLayout) return;
    automatonScale = Math.min(1, ($("automaton-box").clientWidth - 4) / automatonLayout.width);
    applyZoom();
  });

  // Past this many states a picture is no longer read: the DOT source is shown alone.
  const mostStatesDrawn = 1500;

  async function showAutomaton(schema) {
    const answer = await postJSON("/grammar/automaton", { schema });
    let summary = `${answer.rules} rules · ${answer.states} states · masks computed at ${answer.computed_positions} of ${answer.positions} positions`;
    if (answer.states <= mostStatesDrawn) {
      automatonLayout = Automaton.drawAutomaton(Automaton.parseDot(answer.dot), $("automaton"));
      applyZoom();
    } else {
      automatonLayout = null;
      $("automaton").replaceChildren();
      summary += ` · too many to draw here: see the DOT source (or render it with Graphviz's dot)`;
    }
    $("automaton-dot").textContent = answer.dot;
    $("automaton-summary").textContent = summary;
  }

  function showError(message) {
    const error = $("value-error");
    error.textContent = message;
    error.hidden = !message;
  }

  // A token's text with its line breaks and tabs shown as escapes.
  function visible(text) {
    return text.replace(/[\n\r\t]/g, (character) => ({ "\n": "\\n", "\r": "\\r", "\t": "\\t" })[character]);
  }

  function median(values) {
    if (!values.length) return 0;
    const sorted = values.slice().sort((a, b) => a - b);
    const middle = sorted.length >> 1;
    return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  }

  async function generateValue() {
    showError("");
    let schema;
    try {
      schema = JSON.parse($("value-schema").value);
    } catch (error) {
      showError(`The schema is not JSON: ${error.message}`);
      return;
    }
    const run = $("value-run");
    run.disabled = true;
    const output = $("value-output");
    const strip = $("value-tokens");
    const rows = $("trace-table").querySelector("tbody");
    const status = $("value-status");
    output.textContent = "";
    $("value-reasoning").textContent = "";
    $("value-reasoning-box").hidden = true;
    strip.replaceChildren();
    rows.replaceChildren();
    $("value-summary").textContent = "";
    status.textContent = "compiling the schema…";
    const steps = [];
    let text = "";
    let finish = null;
    let timings = null;
    const started = performance.now();
    try {
      await showAutomaton(schema);
      status.textContent = "generating…";
      await streamChat({
        messages: [{ role: "user", content: $("value-prompt").value }],
        response_format: { type: "json_schema", json_schema: { name: "value", schema, strict: true } },
        temperature: number($("value-temperature"), 0),
        max_tokens: number($("value-max-tokens"), 400),
        typeset_trace: true,
      }, (chunk) => {
        if (chunk.timings) timings = chunk.timings;
        const choice = chunk.choices && chunk.choices[0];
        if (choice && choice.delta && choice.delta.reasoning_content) {
          $("value-reasoning-box").hidden = false;
          $("value-reasoning").textContent += choice.delta.reasoning_content;
        }
        if (choice && choice.delta && choice.delta.content) {
          text += choice.delta.content;
          output.textContent = text;
        }
        if (choice && choice.finish_reason) finish = choice.finish_reason;
        for (const step of chunk.typeset_trace || []) {
          steps.push(step);
          const kind = step.forced ? "forced" : step.allowed === null ? "free" : "sampled";
          const chip = document.createElement("span");
          chip.className = `token ${kind}`;
          chip.textContent = step.text;
          chip.title = step.forced ? `token ${step.token}: forced`
            : step.allowed === null ? `token ${step.token}: no grammar`
              : `token ${step.token}: one of ${step.allowed.toLocaleString("en-US")} allowed · mask ${step.mask_us} µs`;
          strip.append(chip);
          const row = rows.insertRow();
          if (step.forced) row.className = "forced";
          const cells = [
            String(steps.length), visible(step.text), String(step.token),
            step.allowed === null ? "–" : step.allowed.toLocaleString("en-US"), step.forced ? "yes" : "",
            step.forced ? "" : step.mask_us.toFixed(1),
          ];
          for (const value of cells) row.insertCell().textContent = value;
          row.cells[1].dataset.text = step.text;
        }
      });
      let parsed = null;
      try { parsed = JSON.parse(text); } catch (_) { /* cut short: shown as text */ }
      if (parsed !== null || text.trim() === "null") {
        output.textContent = JSON.stringify(parsed, null, 2);
        status.textContent = finish === "stop" ? "✓ a value of the schema" : `finished: ${finish}`;
      } else {
        status.textContent = `incomplete (finish reason: ${finish}; raise max tokens)`;
      }
      const forced = steps.filter((step) => step.forced).length;
      const masked = steps.filter((step) => !step.forced && step.allowed !== null).map((step) => step.mask_us);
      const maskMilliseconds = masked.reduce((sum, value) => sum + value, 0) / 1000;
      const seconds = (performance.now() - started) / 1000;
      $("value-summary").textContent = [
        `${steps.length} tokens: ${steps.length - forced} sampled, ${forced} forced (${steps.length ? Math.round((100 * forced) / steps.length) : 0}%)`,
        `masks ${maskMilliseconds.toFixed(2)} ms in all, median ${median(masked).toFixed(1)} µs`,
        timings ? `${timings.predicted_per_second.toFixed(1)} tokens/s decoding, ${seconds.toFixed(2)} s in all` : `${seconds.toFixed(2)} s in all`,
      ].join(" · ");
      // The masks computed while decoding now show their counts in the picture.
      await showAutomaton(schema);
    } catch (error) {
      status.textContent = "";
      showError(error.message);
    } finally {
      run.disabled = false;
    }
  }

  $("value-form").addEventListener("submit", (event) => { event.preventDefault(); generateValue(); });

  showModel();
})();
