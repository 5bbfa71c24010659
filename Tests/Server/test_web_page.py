"""The web page at `/`, in a real browser: Debian's headless Chromium driven by Selenium through
Debian's chromium-driver. The page is loaded from `typeset serve`, used as a person would (typing,
clicking) and checked against independent references: the value and the chat reply against
the same requests made with the `openai` client, the value against its schema with
`jsonschema`, and the automaton's picture against Graphviz's own reading of the same DOT
(`dot -Tplain`).

Screenshots are written to $TYPESET_SCREENSHOTS (default: a temporary directory, printed):
look at them after a change to the page.

Without chromium, chromium-driver or Graphviz the tests are skipped, unless
TYPESET_REQUIRE_CHROMIUM=1 (CI) makes that a failure.
"""
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import httpx
import jsonschema
import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SCREENSHOTS = Path(os.environ.get("TYPESET_SCREENSHOTS") or tempfile.mkdtemp(prefix="typeset-screenshots-"))


def _missing():
    missing = [name for name, path in [("chromium", CHROMIUM), ("chromium-driver", DRIVER)] if not os.access(path, os.X_OK)]
    if not shutil.which("dot"):
        missing.append("graphviz")
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (Python)")
    return missing


@pytest.fixture(scope="module")
def browser():
    missing = _missing()
    if missing:
        message = "the web page's test needs " + ", ".join(missing) + " (apt-get install chromium chromium-driver graphviz)"
        if os.environ.get("TYPESET_REQUIRE_CHROMIUM") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1900", "--lang=en-US"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots: {SCREENSHOTS}")
    yield driver
    driver.quit()


def wait_for(driver, condition, timeout=180, message="the page did not get there"):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(lambda _: condition(), message)


def page_errors(driver):
    """The page's console errors (a script that failed), as Chromium logged them; an HTTP error
    the page answers itself (a 401 before the key, a 400 for a refused schema) is not one."""
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE" and "Failed to load resource" not in entry["message"]]


def set_text(driver, element_id, text):
    element = driver.find_element("id", element_id)
    element.clear()
    element.send_keys(text)


def graphviz_reading(dot):
    """The nodes and edges Graphviz reads from `dot` (`dot -Tplain`)."""
    plain = subprocess.run(["dot", "-Tplain"], input=dot, capture_output=True, text=True, check=True).stdout
    nodes = {line.split()[1] for line in plain.splitlines() if line.startswith("node ")}
    edges = sum(1 for line in plain.splitlines() if line.startswith("edge "))
    return nodes, edges


def test_the_page_is_served_without_a_key_and_names_the_model(start_server, browser):
    server = start_server("--api-key", "sesame")
    page = httpx.get(server.base_url + "/", timeout=10)
    assert page.status_code == 200 and page.text.startswith("<!doctype html>")
    assert page.headers["content-type"].startswith("text/html")
    for path in ["/page.js", "/automaton.js", "/page.css"]:
        assert httpx.get(server.base_url + path, timeout=10).status_code == 200
    # The API still needs the key.
    assert httpx.get(server.base_url + "/v1/models", timeout=10).status_code == 401

    browser.get(server.base_url + "/")
    wait_for(browser, lambda: "API key" in browser.find_element("id", "model").text)
    browser.find_element("css selector", ".key summary").click()
    set_text(browser, "api-key", "sesame\t")   # the tab commits the field (its change event)
    wait_for(browser, lambda: "SmolLM2" in browser.find_element("id", "model").text)
    assert page_errors(browser) == []


def test_without_the_page_the_root_is_not_found(start_server):
    server = start_server("--no-web-page")
    assert httpx.get(server.base_url + "/", timeout=10).status_code == 404
    assert httpx.get(server.base_url + "/v1/models", timeout=10).status_code == 200


def test_chat_shows_the_servers_reply(qwen, browser):
    browser.get(qwen.base_url + "/")
    wait_for(browser, lambda: qwen.model in browser.find_element("id", "model").text)
    set_text(browser, "chat-temperature", "0")
    set_text(browser, "chat-max-tokens", "60")
    question = "Name three rivers of Europe, one per line."
    set_text(browser, "chat-input", question + "\n")   # Enter sends
    wait_for(browser, lambda: browser.find_elements("css selector", ".message.assistant .meta"))
    shown = browser.find_element("css selector", ".message.assistant .text").text
    browser.save_screenshot(str(SCREENSHOTS / "chat.png"))
    expected = qwen.client().chat.completions.create(
        model=qwen.model, messages=[{"role": "user", "content": question}], temperature=0, max_tokens=60).choices[0].message.content
    # The browser's text is the reply's (innerText trims the last line's trailing spaces).
    assert shown.strip() == expected.strip() and expected.strip()
    assert "tokens/s" in browser.find_element("css selector", ".message.assistant .meta").text
    assert page_errors(browser) == []


def test_playground_streams_a_value_with_its_tokens_and_automaton(qwen, browser):
    browser.get(qwen.base_url + "/#playground")
    wait_for(browser, lambda: browser.find_element("id", "value-schema").is_displayed())
    schema = json.loads(browser.find_element("id", "value-schema").get_attribute("value"))
    prompt = browser.find_element("id", "value-prompt").get_attribute("value")
    browser.find_element("id", "value-run").click()
    wait_for(browser, lambda: browser.find_element("id", "value-status").text.startswith("✓"),
             message="no complete value: " + browser.find_element("id", "value-error").text)
    wait_for(browser, lambda: not browser.find_element("id", "value-run").get_attribute("disabled"))
    browser.save_screenshot(str(SCREENSHOTS / "playground.png"))

    # The value: of the schema, and the one the API gives for the same request.
    value = json.loads(browser.find_element("id", "value-output").text)
    jsonschema.validate(value, schema)
    expected = qwen.client().chat.completions.create(
        model=qwen.model, messages=[{"role": "user", "content": prompt}], temperature=0, max_tokens=400,
        response_format={"type": "json_schema", "json_schema": {"name": "value", "schema": schema, "strict": True}})
    assert value == json.loads(expected.choices[0].message.content)
    assert value["date"] == "2025-05-17" and value["attendees"] == 300

    # The table: one row per token of the reply, the forced ones marked, the others with the
    # number of tokens their mask allowed and its time.
    rows = browser.execute_script(
        "return [...document.querySelectorAll('#trace-table tbody tr')]"
        ".map(row => [...row.cells].map(cell => cell.dataset.text ?? cell.textContent))")
    assert len(rows) == expected.usage.completion_tokens
    assert "".join(row[1] for row in rows).startswith(expected.choices[0].message.content)
    forced = [row for row in rows if row[4] == "yes"]
    sampled = [row for row in rows if row[4] == ""]
    assert forced and sampled   # the keys are forced, the values sampled
    assert all(row[3] == "–" and row[5] == "" for row in forced)
    assert all(int(row[3].replace(",", "")) >= 1 and float(row[5]) >= 0 for row in sampled)
    chips = browser.find_elements("css selector", "#value-tokens .token")
    assert len(chips) == len(rows) and len(browser.find_elements("css selector", "#value-tokens .token.forced")) == len(forced)
    assert "forced" in browser.find_element("id", "value-summary").text

    # The automaton's picture holds every state and edge Graphviz reads in the same DOT.
    dot = browser.execute_script("return document.getElementById('automaton-dot').textContent")
    nodes, edges = graphviz_reading(dot)
    drawn = {element.get_attribute("data-id") for element in browser.find_elements("css selector", "#automaton g.state")}
    assert drawn == nodes
    assert len(browser.find_elements("css selector", "#automaton g.edge")) == edges
    box = browser.find_element("id", "automaton-box")
    browser.execute_script("arguments[0].scrollIntoView()", box)
    box.screenshot(str(SCREENSHOTS / "automaton.png"))
    assert page_errors(browser) == []


def test_playground_shows_why_a_schema_is_refused(qwen, browser):
    browser.get(qwen.base_url + "/#playground")
    wait_for(browser, lambda: browser.find_element("id", "value-schema").is_displayed())
    schema = {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True, "items": {"type": "object"}}}}
    browser.execute_script("document.getElementById('value-schema').value = arguments[0]", json.dumps(schema))
    browser.find_element("id", "value-run").click()
    error = browser.find_element("id", "value-error")
    wait_for(browser, lambda: error.is_displayed() and error.text)
    assert "'uniqueItems'" in error.text and "#/properties/tags" in error.text
    browser.execute_script("document.getElementById('value-schema').value = '{\"type\": '")
    browser.find_element("id", "value-run").click()
    wait_for(browser, lambda: error.text.startswith("The schema is not JSON"))
    assert page_errors(browser) == []


# MARK: The page's two extensions of the API, without the browser.

EVENT = {"type": "object", "properties": {"name": {"type": "string"}, "attendees": {"type": "integer"}},
         "required": ["name", "attendees"], "additionalProperties": False}


def test_typeset_trace_has_a_step_per_token(smollm2):
    request = {"messages": [{"role": "user", "content": "The Lisbon Coffee Festival had 300 attendees."}], "temperature": 0,
               "max_tokens": 60, "typeset_trace": True,
               "response_format": {"type": "json_schema", "json_schema": {"name": "event", "schema": EVENT}}}
    whole = httpx.post(smollm2.base_url + "/v1/chat/completions", json=request, timeout=60).json()
    steps = whole["typeset_trace"]
    assert len(steps) == whole["usage"]["completion_tokens"]
    assert "".join(step["text"] for step in steps) == whole["choices"][0]["message"]["content"]
    assert steps[0]["text"] == "{" and not steps[0]["forced"] and steps[0]["allowed"] >= 1
    assert any(step["forced"] and step["allowed"] is None and step["mask_us"] == 0 for step in steps)
    jsonschema.validate(json.loads(whole["choices"][0]["message"]["content"]), EVENT)

    # Streamed: the same steps, spread over the chunks.
    streamed = []
    with httpx.stream("POST", smollm2.base_url + "/v1/chat/completions", json={**request, "stream": True}, timeout=60) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                streamed += json.loads(line[6:]).get("typeset_trace", [])
    assert [(step["token"], step["forced"], step["allowed"]) for step in streamed] == \
        [(step["token"], step["forced"], step["allowed"]) for step in steps]

    # Not asked: not there. Several choices: refused, naming the field.
    plain = httpx.post(smollm2.base_url + "/v1/chat/completions", json={**request, "typeset_trace": False}, timeout=60).json()
    assert "typeset_trace" not in plain
    refused = httpx.post(smollm2.base_url + "/v1/chat/completions", json={**request, "n": 2}, timeout=60)
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "typeset_trace"


def test_grammar_automaton_is_graphviz_dot(smollm2):
    if not shutil.which("dot"):
        pytest.skip("needs Graphviz's dot")
    answer = httpx.post(smollm2.base_url + "/grammar/automaton", json={"schema": EVENT}, timeout=60)
    assert answer.status_code == 200
    body = answer.json()
    nodes, edges = graphviz_reading(body["dot"])
    # One node per state of the reachable rules, and the start point.
    assert len(nodes) == body["states"] + 1 and edges > 0 and body["rules"] >= 1
    assert 0 <= body["computed_positions"] <= body["positions"]
    gbnf = httpx.post(smollm2.base_url + "/grammar/automaton", json={"grammar": 'root ::= "yes" | "no"'}, timeout=60).json()
    assert "digraph grammar" in gbnf["dot"]

    refused = httpx.post(smollm2.base_url + "/grammar/automaton",
                         json={"schema": {"type": "string", "format": "not-a-format"}}, timeout=60)
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "schema"
    assert "'format'" in refused.json()["error"]["message"]
    for body in [{}, {"schema": EVENT, "grammar": 'root ::= "a"'}, {"schema": EVENT, "extra": 1}]:
        answer = httpx.post(smollm2.base_url + "/grammar/automaton", json=body, timeout=60)
        assert answer.status_code == 400, body


def test_typeset_trace_follows_a_tool_call(qwen):
    """The markup Typeset writes around a call is traced as forced, so the steps still
    count the reply's tokens."""
    request = {"messages": [{"role": "user", "content": "What is the weather in Oslo?"}], "temperature": 0, "max_tokens": 80,
               "typeset_trace": True, "tool_choice": "required",
               "tools": [{"type": "function", "function": {
                   "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]}
    whole = httpx.post(qwen.base_url + "/v1/chat/completions", json=request, timeout=60).json()
    call = whole["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "get_weather" and json.loads(call["arguments"])["city"] == "Oslo"
    steps = whole["typeset_trace"]
    assert len(steps) == whole["usage"]["completion_tokens"]
    assert any(step["forced"] for step in steps) and any(step["allowed"] for step in steps)
    assert "Oslo" in "".join(step["text"] for step in steps)
