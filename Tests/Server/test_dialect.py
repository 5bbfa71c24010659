"""llama-server's dialect, as its clients send it: the un-prefixed routes, a browser's CORS
preflight, any model name, Anthropic's API-key header, llama-server's spellings of OpenAI's
fields, and null or empty fields that ask for nothing. Each is checked against what the request
means (the same reply as the OpenAI spelling, a schema the reply validates against), not only
against a 200."""
import json
import math

import httpx
import jsonschema
import openai
import pytest

from test_limits import chat, error, post

PREFLIGHT = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "Authorization"}


def reply(response):
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]["content"]


def test_the_routes_without_v1(smollm2):
    """An OpenAI client pointed at the server's root, as llama-server allows."""
    client = openai.OpenAI(base_url=smollm2.base_url, api_key="unused", max_retries=0)
    assert [model.id for model in client.models.list()] == [smollm2.model]
    answer = client.chat.completions.create(model="anything", messages=[{"role": "user", "content": "Hi"}], max_tokens=4, temperature=0)
    direct = smollm2.client().chat.completions.create(model="anything", messages=[{"role": "user", "content": "Hi"}], max_tokens=4, temperature=0)
    assert answer.choices[0].message.content == direct.choices[0].message.content
    assert httpx.get(smollm2.base_url + "/v1/health", timeout=10).json() == {"status": "ok"}


def test_any_model_name_unless_strict(smollm2, start_server):
    answer = smollm2.client().chat.completions.create(model="gpt-3.5-turbo", messages=[{"role": "user", "content": "Hi"}], max_tokens=2)
    assert answer.model == smollm2.model   # the served model, as llama-server names it
    strict = start_server("--strict-model-names", "--alias", "house-model")
    assert error(post(strict, chat(model="gpt-4o", max_tokens=2)), 404)["code"] == "model_not_found"
    for name in ["house-model", "SmolLM2-135M-Instruct.Q4_1", "SmolLM2-135M-Instruct.Q4_1.gguf"]:
        assert post(strict, chat(model=name, max_tokens=2)).status_code == 200


def test_cors_preflight_and_headers(start_server):
    """llama-server's defaults: any origin, named back with credentials; the preflight answered
    before the API key is checked (browsers send it without one)."""
    server = start_server("--api-key", "s3cret")
    preflight = httpx.options(server.base_url + "/v1/chat/completions", headers={"Origin": "https://app.example", **PREFLIGHT})
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert preflight.headers["access-control-allow-credentials"] == "true"
    assert preflight.headers["access-control-allow-methods"] == "GET, POST, DELETE, OPTIONS"
    assert preflight.headers["access-control-allow-headers"] == "*"
    # The real request still needs the key, and its answer (an error too) names the origin.
    refused = post(server, chat(max_tokens=2), headers={"Origin": "https://app.example"})
    assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == "https://app.example"
    allowed = post(server, chat(max_tokens=2), headers={"Origin": "https://app.example", "Authorization": "Bearer s3cret"})
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == "https://app.example"


@pytest.mark.parametrize("origin, allowed", [
    ("http://localhost", True), ("http://localhost:8080", True), ("http://127.0.0.1:3000", True), ("http://[::1]:3000", True),
    ("http://evil.com", False), ("http://localhost.evil.com", False), ("http://notlocalhost", False),
    ("http://localhost:8080@evil.com", False),
])
def test_cors_origins_localhost(start_server, origin, allowed):
    server = start_server("--cors-origins", "localhost", ready=False)
    preflight = httpx.options(server.base_url + "/completions", headers={"Origin": origin, **PREFLIGHT})
    assert preflight.status_code == 200
    assert preflight.headers.get("access-control-allow-origin") == (origin if allowed else None)


def test_cors_origins_listed(start_server):
    server = start_server("--cors-origins", "https://a.example, https://b.example", "--no-cors-credentials")
    for origin, expected in [("https://b.example", "https://b.example"), ("https://c.example", None)]:
        response = post(server, chat(max_tokens=2), headers={"Origin": origin})
        assert response.status_code == 200
        assert response.headers.get("access-control-allow-origin") == expected
    preflight = httpx.options(server.base_url + "/v1/models", headers={"Origin": "https://a.example", **PREFLIGHT})
    assert preflight.headers["access-control-allow-credentials"] == "false"


def test_the_api_key_as_anthropic_sends_it(start_server):
    server = start_server("--api-key", "s3cret")
    assert post(server, chat(max_tokens=2), headers={"X-Api-Key": "s3cret"}).status_code == 200
    assert post(server, chat(max_tokens=2), headers={"Authorization": "s3cret"}).status_code == 200
    assert error(post(server, chat(max_tokens=2), headers={"X-Api-Key": "wrong"}), 401)["code"] == "invalid_api_key"
    assert httpx.get(server.base_url + "/v1/health").status_code == 200


@pytest.mark.parametrize("fields", [
    {"logit_bias": None}, {"logit_bias": {}}, {"prediction": None}, {"metadata": {}}, {"tools": []},
    {"cache_prompt": True}, {"cache_prompt": False}, {"typical_p": 1}, {"stop": []}, {"user": ""},
    {"frequency_penalty": 0, "presence_penalty": 0}, {"response_format": None}, {"n": 1},
])
def test_fields_that_ask_for_nothing_are_accepted(smollm2, fields):
    """A null, an empty value or the default changes nothing: the same reply as without it."""
    plain = reply(post(smollm2, chat("Name a colour.", max_tokens=8, temperature=0)))
    assert reply(post(smollm2, chat("Name a colour.", max_tokens=8, temperature=0, **fields))) == plain


def test_llama_server_spellings(smollm2):
    """n_predict and repeat_penalty mean max_tokens and repetition_penalty."""
    openai_spelling = post(smollm2, chat("Count to twenty.", max_tokens=12, repetition_penalty=1.3, temperature=0)).json()
    llama_spelling = post(smollm2, chat("Count to twenty.", n_predict=12, repeat_penalty=1.3, temperature=0)).json()
    assert llama_spelling["choices"][0]["message"] == openai_spelling["choices"][0]["message"]
    assert llama_spelling["usage"]["completion_tokens"] == 12
    # -1: no limit (the raw completion endpoint's default of 16 does not apply).
    unlimited = post(smollm2, {"prompt": "1, 2, 3, 4, 5, 6, 7, 8,", "n_predict": -1, "temperature": 0,
                               "stop": ["40"]}, path="/v1/completions").json()
    assert unlimited["usage"]["completion_tokens"] > 16
    assert error(post(smollm2, chat(n_predict=0)), 400)["param"] == "n_predict"
    assert error(post(smollm2, chat(typical_p=0.5)), 400)["param"] == "typical_p"


SCHEMA = {"type": "object", "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]},
                                           "hex": {"type": "string", "pattern": "^#[0-9a-f]{6}$"}},
          "required": ["colour", "hex"], "additionalProperties": False}


@pytest.mark.parametrize("fields", [
    {"json_schema": SCHEMA},
    {"response_format": {"type": "json_object", "schema": SCHEMA}},
])
def test_llama_server_schema_spellings(smollm2, fields):
    """The schema holds the reply exactly as response_format's json_schema would."""
    value = json.loads(reply(post(smollm2, chat("Pick a colour and give its hex code.", max_tokens=60, temperature=0, **fields))))
    jsonschema.validate(value, SCHEMA)
    openai_spelling = {"response_format": {"type": "json_schema", "json_schema": {"name": "response", "schema": SCHEMA}}}
    assert json.loads(reply(post(smollm2, chat("Pick a colour and give its hex code.", max_tokens=60, temperature=0, **openai_spelling)))) == value
    both = {"json_schema": SCHEMA, "response_format": {"type": "json_object"}}
    assert error(post(smollm2, chat(**both)), 400)["param"] == "json_schema"


def test_logit_bias_bans_and_favours_tokens(smollm2):
    """A bias of -100 (or llama-server's false) keeps a token out of the reply, given by id or
    as a text whose tokens are biased (llama-server's array form too); a large positive bias
    makes a token the greedy choice."""
    def first_tokens(**fields):
        body = completion(smollm2, prompt="The capital of France is", n_predict=6, temperature=0, return_tokens=True, **fields)
        return body["tokens"]
    plain = first_tokens()
    banned = plain[0]
    for bias in [{str(banned): -100}, [[banned, False]]]:
        tokens = first_tokens(logit_bias=bias)
        assert banned not in tokens and tokens[0] != banned
    text = httpx.post(smollm2.base_url + "/detokenize", json={"tokens": [banned]}, timeout=30).json()["content"]
    assert first_tokens(logit_bias=[[text, False]]) == first_tokens(logit_bias={str(banned): -100})
    favoured = httpx.post(smollm2.base_url + "/tokenize", json={"content": " Berlin"}, timeout=30).json()["tokens"][0]
    assert first_tokens(logit_bias={str(favoured): 100})[0] == favoured
    # The chat endpoint, through the openai client: a word banned by its tokens never appears.
    words = smollm2.client().chat.completions.create(model="m", messages=[{"role": "user", "content": "Say the word Paris five times."}],
                                                     max_tokens=30, temperature=0).choices[0].message.content
    assert "Paris" in words
    paris = httpx.post(smollm2.base_url + "/tokenize", json={"content": "Paris"}, timeout=30).json()["tokens"]
    spaced = httpx.post(smollm2.base_url + "/tokenize", json={"content": " Paris"}, timeout=30).json()["tokens"]
    without = smollm2.client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Say the word Paris five times."}], max_tokens=30, temperature=0,
        logit_bias={str(token): -100 for token in paris + spaced}).choices[0].message.content
    assert "Paris" not in without


def test_frequency_and_presence_penalties(smollm2):
    """The penalties lower what was said: asked to repeat a word, the model repeats it less
    with either penalty; at 0 the reply is the plain one."""
    def reply_tokens(**fields):
        return completion(smollm2, prompt="Repeat after me: cat cat cat cat cat cat", n_predict=24, temperature=0,
                          return_tokens=True, **fields)["tokens"]
    cat = httpx.post(smollm2.base_url + "/tokenize", json={"content": " cat"}, timeout=30).json()["tokens"][0]
    plain = reply_tokens()
    assert plain.count(cat) == 24
    assert reply_tokens(frequency_penalty=0, presence_penalty=0) == plain
    for fields in [{"frequency_penalty": 1.5}, {"presence_penalty": 1.5}]:
        assert reply_tokens(**fields).count(cat) < 24


def test_timings_and_fingerprint(smollm2):
    """llama-server's timings on the reply (its last event when streamed), the counts agreeing
    with the usage; a system_fingerprint on every object."""
    body = post(smollm2, chat("Say hello.", max_tokens=6, temperature=0)).json()
    usage, timings = body["usage"], body["timings"]
    assert body["system_fingerprint"].startswith("typeset-")
    assert timings["predicted_n"] == usage["completion_tokens"]
    assert timings["prompt_n"] + timings["cache_n"] == usage["prompt_tokens"]
    assert timings["predicted_ms"] > 0 and timings["predicted_per_second"] > 0
    for include_usage in [False, True]:
        fields = {"stream": True, **({"stream_options": {"include_usage": True}} if include_usage else {})}
        with httpx.stream("POST", smollm2.base_url + "/v1/chat/completions", json=chat("Say hello.", max_tokens=6, temperature=0, **fields), timeout=60) as response:
            events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")]
        assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
        assert all(event["system_fingerprint"] == body["system_fingerprint"] for event in events)
        assert [("timings" in event) for event in events] == [False] * (len(events) - 1) + [True]
        assert events[-1]["timings"]["predicted_n"] == timings["predicted_n"]
        assert ("usage" in events[-1]) == include_usage


def test_context_overflow_as_llama_server_reports_it(start_server):
    server = start_server("--context", "64")
    body = error(post(server, chat("tell me a story " * 40)), 400)
    assert (body["type"], body["code"]) == ("exceed_context_size_error", "context_length_exceeded")
    assert body["n_ctx"] == 64 and body["n_prompt_tokens"] > 64


def test_apply_template_and_input_tokens(smollm2):
    """The prompt a reply would read: the chat template's text (ChatML for SmolLM2), whose
    length in tokens is what the reply itself reports as its prompt."""
    tool = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    for fields in [{}, {"response_format": {"type": "json_schema", "json_schema": {"name": "colour", "schema": SCHEMA}}},
                   {"tools": [tool]}]:
        request = chat("Pick a colour.", **fields)
        text = post(smollm2, request, path="/apply-template").json()["prompt"]
        assert text.startswith("<|im_start|>system\nYou are a helpful assistant.")
        assert "<|im_start|>user\n" in text and text.endswith("Pick a colour.<|im_end|>\n<|im_start|>assistant\n")
        assert ('"hex"' in text) == ("response_format" in fields)      # the schema's instruction
        assert ("get_weather" in text) == ("tools" in fields)           # the functions' description
        counted = post(smollm2, request, path="/v1/chat/completions/input_tokens").json()
        assert counted["object"] == "response.input_tokens"
        tokens = httpx.post(smollm2.base_url + "/tokenize", json={"content": text}, timeout=30).json()["tokens"]
        assert counted["input_tokens"] == len(tokens)
        replied = post(smollm2, {**request, "max_tokens": 64}).json()
        assert replied["usage"]["prompt_tokens"] == counted["input_tokens"]


def test_props(start_server):
    server = start_server("--parallel", "3", "--context", "1024")
    props = httpx.get(server.base_url + "/props", timeout=10).json()
    assert props["model_path"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert props["total_slots"] == 3 and props["default_generation_settings"]["n_ctx"] == 1024
    assert "<|im_start|>" in props["chat_template"] and props["eos_token"] == "<|im_end|>"
    assert props["model_alias"] == server.model and props["build_info"].startswith("typeset-")


def completion(server, **fields):
    response = post(server, fields, path="/completion")
    assert response.status_code == 200, response.text
    return response.json()


def test_llama_server_completion(smollm2):
    """llama-server's own /completion: the same continuation as OpenAI's /v1/completions, in
    llama-server's shape, its counts agreeing with each other and with /detokenize."""
    prompt = "The capital of France is"
    body = completion(smollm2, prompt=prompt, n_predict=12, temperature=0, return_tokens=True)
    openai_spelling = post(smollm2, {"prompt": prompt, "max_tokens": 12, "temperature": 0}, path="/v1/completions").json()
    assert body["content"] == openai_spelling["choices"][0]["text"]
    assert (body["stop"], body["stop_type"], body["stopping_word"], body["truncated"]) == (True, "limit", "", False)
    assert body["tokens_predicted"] == 12 == len(body["tokens"]) == body["timings"]["predicted_n"]
    assert body["tokens_evaluated"] == body["timings"]["prompt_n"] + body["timings"]["cache_n"]
    assert httpx.post(smollm2.base_url + "/detokenize", json={"tokens": body["tokens"]}).json()["content"] == body["content"]
    assert body["has_new_line"] == ("\n" in body["content"]) and body["prompt"] == prompt
    assert body["generation_settings"]["n_predict"] == 12 and body["model"] == smollm2.model
    # The un-prefixed plural is the same endpoint.
    assert post(smollm2, {"prompt": prompt, "n_predict": 12, "temperature": 0}, path="/completions").json()["content"] == body["content"]


def test_llama_server_completion_stops(smollm2):
    first = completion(smollm2, prompt="1, 2, 3, 4,", n_predict=30, temperature=0)
    word = first["content"].split(",")[2]        # a number the model writes
    stopped = completion(smollm2, prompt="1, 2, 3, 4,", n_predict=30, temperature=0, stop=[word])
    assert (stopped["stop_type"], stopped["stopping_word"]) == ("word", word)
    assert stopped["content"] == first["content"][:first["content"].index(word)]
    chat_prompt = "<|im_start|>user\nSay hi.<|im_end|>\n<|im_start|>assistant\n"   # control tokens parsed, as llama-server does
    ended = completion(smollm2, prompt=chat_prompt, n_predict=200, temperature=0)
    assert ended["stop_type"] == "eos" and ended["tokens_predicted"] < 200


def test_llama_server_completion_probabilities(smollm2):
    body = completion(smollm2, prompt="The capital of France is", n_predict=5, n_probs=3, temperature=0, return_tokens=True)
    entries = body["completion_probabilities"]
    assert [entry["id"] for entry in entries] == body["tokens"]
    assert "".join(entry["token"] for entry in entries) == body["content"]
    for entry in entries:
        tops = [candidate["logprob"] for candidate in entry["top_logprobs"]]
        assert len(tops) == 3 and tops == sorted(tops, reverse=True) and all(value <= 0 for value in tops)
        assert entry["top_logprobs"][0]["id"] == entry["id"]         # greedy: the likeliest
        assert bytes(entry["bytes"]).decode() == entry["token"]


def test_llama_server_post_sampling_probabilities(smollm2):
    """post_sampling_probs lists the distribution each token was drawn from: the model's own
    probabilities at that step (n_probs without it), cut to top_k and sharpened by the
    temperature, which this test computes itself; greedy puts it all on the token chosen."""
    prompt = "Today was the day. Today I would finally become a"
    own = completion(smollm2, prompt=prompt, n_predict=1, n_probs=20, temperature=0)["completion_probabilities"][0]
    for temperature in (0.7, 1.5):
        body = completion(smollm2, prompt=prompt, n_predict=1, n_probs=10, temperature=temperature, top_k=4, top_p=1, min_p=0,
                          post_sampling_probs=True, seed=3)
        entry = body["completion_probabilities"][0]
        assert "logprob" not in entry and "top_logprobs" not in entry
        kept = own["top_logprobs"][:4]
        weights = [math.exp(candidate["logprob"] / temperature) for candidate in kept]
        expected = [(candidate["id"], weight / sum(weights)) for candidate, weight in zip(kept, weights)]
        assert [candidate["id"] for candidate in entry["top_probs"]] == [token for token, _ in expected]
        for candidate, (_, probability) in zip(entry["top_probs"], expected):
            assert candidate["prob"] == pytest.approx(probability, rel=1e-3)
            assert bytes(candidate["bytes"]).decode() == candidate["token"]
        assert entry["prob"] == pytest.approx(dict(expected)[entry["id"]], rel=1e-3)
        assert body["generation_settings"]["post_sampling_probs"] is True
    greedy = completion(smollm2, prompt=prompt, n_predict=3, n_probs=5, temperature=0, post_sampling_probs=True)
    for entry in greedy["completion_probabilities"]:
        assert entry["prob"] == 1 and [(candidate["id"], candidate["prob"]) for candidate in entry["top_probs"]] == [(entry["id"], 1)]
    assert greedy["completion_probabilities"][0]["id"] == own["id"]
    # Where llama-server samples changes nothing: accepted either way.
    same = completion(smollm2, prompt=prompt, n_predict=3, n_probs=5, temperature=0, post_sampling_probs=True, backend_sampling=True)
    assert same["completion_probabilities"] == greedy["completion_probabilities"]


def test_llama_server_completion_stream(smollm2):
    whole = completion(smollm2, prompt="Once upon a time", n_predict=16, temperature=0, n_probs=2)
    with httpx.stream("POST", smollm2.base_url + "/completion",
                      json={"prompt": "Once upon a time", "n_predict": 16, "temperature": 0, "n_probs": 2, "stream": True}, timeout=60) as response:
        lines = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: {") for line in lines)       # no [DONE]: llama-server's own stream
    events = [json.loads(line[6:]) for line in lines]
    assert [event["stop"] for event in events] == [False] * (len(events) - 1) + [True]
    assert "".join(event["content"] for event in events) == whole["content"]
    assert sum(len(event["completion_probabilities"]) for event in events[:-1]) == 16
    assert events[-1]["timings"]["predicted_n"] == 16 and events[-1]["content"] == ""


def test_llama_server_completion_schema_and_refusals(smollm2):
    body = completion(smollm2, prompt="A colour and its hex code as JSON:", n_predict=60, temperature=0, json_schema=SCHEMA)
    jsonschema.validate(json.loads(body["content"]), SCHEMA)
    for fields, parameter in [({"grammar": "root ::= \"a\"", "json_schema": SCHEMA}, "grammar"), ({"ignore_eos": True}, "ignore_eos"),
                              ({"samplers": ["top_k"]}, "samplers")]:
        assert error(post(smollm2, {"prompt": "Hi", **fields}, path="/completion"), 400)["param"] == parameter
    assert post(smollm2, {"prompt": "Hi", "n_predict": 2, "id_slot": -1, "cache_prompt": True, "grammar": ""}, path="/completion").status_code == 200


@pytest.mark.parametrize("path, body, done", [
    ("/v1/completions", {"prompt": "1, 2, 3,", "max_tokens": 4000}, True),
    ("/completion", {"prompt": "1, 2, 3,", "n_predict": 4000}, False),
    # A schema of a thousand numbers keeps the chat reply going past the deadline.
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "List numbers."}], "max_tokens": 3000,
                              "response_format": {"type": "json_schema", "json_schema": {"name": "numbers", "schema": {
                                  "type": "array", "items": {"type": "integer"}, "minItems": 1000}}}}, True),
])
def test_a_stream_cut_by_the_deadline_ends_with_its_error(start_server, path, body, done):
    """Every endpoint's stream ends the same way when the request's time is up: the reply's
    last events, then a 504 error event, then [DONE] where the dialect has one."""
    server = start_server("--timeout", "0.5")
    with httpx.stream("POST", server.base_url + path, json={**body, "temperature": 0, "stream": True}, timeout=60) as response:
        assert response.status_code == 200
        lines = [line for line in response.iter_lines() if line]
    assert (lines[-1] == "data: [DONE]") == done
    events = [json.loads(line[6:]) for line in lines if line != "data: [DONE]"]
    assert events[-1]["error"]["type"] == "timeout_error" and "longer than" in events[-1]["error"]["message"]
    assert "timings" in events[-2] and len(events) > 3                    # the reply's last event came first
    assert error(post(server, {**body, "temperature": 0}, path=path), 504)["type"] == "timeout_error"


def test_a_final_assistant_message_is_continued(smollm2):
    """Prefill: the reply continues the assistant's message, exactly as a raw completion of the
    prompt /apply-template shows (which ends with that beginning); Anthropic's client gets the
    same continuation; a schema cannot hold a continued message."""
    messages = [{"role": "user", "content": "What is the capital of France?"},
                {"role": "assistant", "content": "The capital of France is"}]
    prompt = post(smollm2, {"messages": messages}, path="/apply-template").json()["prompt"]
    assert prompt.endswith("<|im_start|>assistant\nThe capital of France is")
    reply = post(smollm2, {"messages": messages, "max_tokens": 12, "temperature": 0})
    assert reply.status_code == 200, reply.text
    content = reply.json()["choices"][0]["message"]["content"]
    raw = completion(smollm2, prompt=prompt, n_predict=12, temperature=0)["content"]
    assert content == raw and content
    vllm = post(smollm2, {"messages": messages, "max_tokens": 12, "temperature": 0,
                          "continue_final_message": True, "add_generation_prompt": False}).json()
    assert vllm["choices"][0]["message"]["content"] == content
    import anthropic
    message = anthropic.Anthropic(base_url=smollm2.base_url, api_key="unused", max_retries=0).messages.create(
        model="m", max_tokens=12, messages=messages, extra_body={"temperature": 0})
    assert message.content[0].text == content
    assert error(post(smollm2, {"messages": messages, "continue_final_message": True, "add_generation_prompt": True}), 400)["param"] == "continue_final_message"
    schema = {"messages": messages, "response_format": {"type": "json_object"}}
    assert error(post(smollm2, schema), 400)["param"] == "messages"


def test_verbose_shows_the_prompt(smollm2):
    """llama-server's `verbose`: the reply carries the prompt as the template rendered it."""
    body = post(smollm2, {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3, "verbose": True}).json()
    expected = post(smollm2, {"messages": [{"role": "user", "content": "Hi"}]}, path="/apply-template").json()["prompt"]
    assert body["__verbose"]["prompt"] == expected
    assert body["__verbose"]["tokens_predicted"] == body["usage"]["completion_tokens"]
    assert "__verbose" not in post(smollm2, {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3}).json()


def test_gbnf_grammar(smollm2):
    """llama-server's `grammar` (GBNF) holds the reply: every reply matches the language the
    grammar defines (checked with the equivalent regular expression), in chat and in
    /completion; a grammar that names an undefined rule is a 400 naming `grammar`."""
    import re
    grammar = 'root ::= ("yes" | "no") ", because " [a-z ]{3,40} "."'
    language = re.compile(r"(yes|no), because [a-z ]{3,40}\.")
    for question in ["Is the sky blue?", "Is fire cold?", "Do fish swim?"]:
        reply = post(smollm2, {"messages": [{"role": "user", "content": question}], "grammar": grammar, "max_tokens": 60, "temperature": 0})
        assert reply.status_code == 200, reply.text
        choice = reply.json()["choices"][0]
        assert language.fullmatch(choice["message"]["content"]) and choice["finish_reason"] == "stop", choice
    digits = completion(smollm2, prompt="The year the Berlin wall fell:", grammar='root ::= " " [0-9]{4}', n_predict=10, temperature=0)
    assert re.fullmatch(r" [0-9]{4}", digits["content"]) and digits["stop_type"] == "eos"
    assert error(post(smollm2, {"prompt": "x", "grammar": "root ::= undefined"}, path="/completion"), 400)["param"] == "grammar"
    both = {"messages": [{"role": "user", "content": "Hi"}], "grammar": 'root ::= "a"', "response_format": {"type": "json_object"}}
    assert error(post(smollm2, both), 400)["param"] == "grammar"


def test_several_choices(smollm2):
    """n choices, decoded together: choice i is the reply a request with the seed plus i gets
    (so greedy choices agree and sampled ones differ), usage counts the prompt once and every
    choice's tokens; the other endpoints refuse n > 1 by name."""
    messages = [{"role": "user", "content": "Write a short poem about rain."}]
    def single(seed, temperature):
        return post(smollm2, {"messages": messages, "max_tokens": 20, "temperature": temperature, "seed": seed}).json()
    several = smollm2.client().chat.completions.create(model="m", messages=messages, max_tokens=20, temperature=1.0, seed=7, n=3)
    assert [choice.index for choice in several.choices] == [0, 1, 2]
    texts = [choice.message.content for choice in several.choices]
    assert texts == [single(7 + index, 1.0)["choices"][0]["message"]["content"] for index in range(3)]
    assert len(set(texts)) > 1
    one = single(7, 1.0)["usage"]
    assert several.usage.prompt_tokens == one["prompt_tokens"]
    assert several.usage.completion_tokens == sum(single(7 + index, 1.0)["usage"]["completion_tokens"] for index in range(3))
    greedy = smollm2.client().chat.completions.create(model="m", messages=messages, max_tokens=12, temperature=0, n=2)
    assert greedy.choices[0].message.content == greedy.choices[1].message.content

    # Streamed: each chunk names its choice, the choices' text the same as answered whole,
    # each choice ends with its finish reason, and the usage counts them all.
    streamed, finished, usage = ["", "", ""], [None, None, None], None
    for chunk in smollm2.client().chat.completions.create(model="m", messages=messages, max_tokens=20, temperature=1.0, seed=7, n=3,
                                                          stream=True, stream_options={"include_usage": True}):
        usage = chunk.usage or usage
        for choice in chunk.choices:
            streamed[choice.index] += choice.delta.content or ""
            finished[choice.index] = choice.finish_reason or finished[choice.index]
    assert streamed == texts
    assert finished == [choice.finish_reason for choice in several.choices]
    assert usage.completion_tokens == several.usage.completion_tokens and usage.prompt_tokens == several.usage.prompt_tokens
    for path, body in [("/v1/completions", {"prompt": "Hi", "n": 2}), ("/completion", {"prompt": "Hi", "n": 2}),
                       ("/v1/responses", {"input": "Hi", "n": 2})]:
        assert error(post(smollm2, body, path=path), 400)["param"] == "n"


def test_slots_tags_and_several_addresses(start_server):
    """llama-server's /slots (a place per reply decoded together, held while a reply runs;
    501 with --no-slots), --tag listed by /v1/models, and --host naming two addresses served
    on one port."""
    import socket
    server = start_server("--parallel", "2", "--context", "512", "--tag", "chat", "--tag", "small", "--alias", "house")
    slots = httpx.get(server.base_url + "/slots", timeout=10).json()
    assert [(slot["id"], slot["n_ctx"], slot["is_processing"]) for slot in slots] == [(0, 512, False), (1, 512, False)]
    with httpx.stream("POST", server.base_url + "/completion", timeout=60, json={
            "prompt": "Repeat after me: cat cat cat cat cat cat", "n_predict": 400, "temperature": 0, "stream": True}) as response:
        lines = response.iter_lines()   # kept: a dropped iterator closes the stream, and the reply stops
        next(lines)
        assert [slot["is_processing"] for slot in httpx.get(server.base_url + "/slots", timeout=10).json()] == [True, False]
        for _ in lines:
            pass
    assert [slot["is_processing"] for slot in httpx.get(server.base_url + "/slots", timeout=10).json()] == [False, False]
    model = httpx.get(server.base_url + "/v1/models", timeout=10).json()["data"][0]
    assert (model["id"], model["aliases"], model["tags"]) == ("house", ["house"], ["chat", "small"])
    assert httpx.get(start_server("--no-slots").base_url + "/slots", timeout=10).status_code == 501
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        hosts = ["127.0.0.1", "[::1]"]
    except OSError:
        hosts = ["127.0.0.1", "localhost"]
    both = start_server("--host", "127.0.0.1," + hosts[1].strip("[]"), "--port", str(port))
    for host in hosts:
        assert httpx.get(f"http://{host}:{port}/health", timeout=10).json() == {"status": "ok"}


def test_llama_server_prompt_forms(smollm2):
    """/completion's prompt as llama-server reads it: token ids, a text, an object with
    prompt_string and a sequence mixing ids and text each give the completion of the same
    tokens; several prompts give one result each, in order."""
    text = "The capital of France is"
    tokens = httpx.post(smollm2.base_url + "/tokenize", json={"content": text}, timeout=30).json()["tokens"]
    expected = completion(smollm2, prompt=text, n_predict=8, temperature=0)["content"]
    for prompt in [tokens, {"prompt_string": text}, tokens[:2] + [text[len(httpx.post(smollm2.base_url + "/detokenize", json={"tokens": tokens[:2]}, timeout=30).json()["content"]):]]]:
        assert completion(smollm2, prompt=prompt, n_predict=8, temperature=0)["content"] == expected, prompt
    several = post(smollm2, {"prompt": [tokens, "The capital of Italy is", {"prompt_string": text}], "n_predict": 8, "temperature": 0},
                   path="/completion").json()
    assert [result["index"] for result in several] == [0, 1, 2]
    assert several[0]["content"] == several[2]["content"] == expected
    assert several[1]["content"] == completion(smollm2, prompt="The capital of Italy is", n_predict=8, temperature=0)["content"]
    assert error(post(smollm2, {"prompt": [text, text], "stream": True}, path="/completion"), 400)["param"] == "prompt"


def test_prompt_progress_in_a_stream(smollm2):
    """return_progress: before the reply's first token the stream tells how far the prompt's
    reading has come (llama-server's prompt_progress: total, cache, processed, time_ms), from
    the cache alone to the whole prompt; the same prompt again starts from its cached tokens."""
    messages = [{"role": "user", "content": "Summarize this. " + "The quick brown fox jumps over the lazy dog. " * 60}]

    def progress_and_usage():
        with httpx.stream("POST", smollm2.base_url + "/v1/chat/completions", timeout=120, json={
                "messages": messages, "max_tokens": 4, "temperature": 0, "stream": True, "return_progress": True,
                "stream_options": {"include_usage": True}}) as response:
            events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")]
        updates = [event["prompt_progress"] for event in events if "prompt_progress" in event]
        first_content = next(index for index, event in enumerate(events) if event["choices"] and event["choices"][0]["delta"].get("content"))
        assert all(index < first_content for index, event in enumerate(events) if "prompt_progress" in event)
        return updates, events[-1]["usage"]

    updates, usage = progress_and_usage()
    assert len(updates) >= 2
    assert all(update["total"] == usage["prompt_tokens"] for update in updates)
    assert updates[0]["processed"] == updates[0]["cache"]
    assert [update["processed"] for update in updates] == sorted({update["processed"] for update in updates})
    assert updates[-1]["processed"] == updates[-1]["total"]
    again, usage = progress_and_usage()
    assert again[0]["cache"] == usage["prompt_tokens_details"]["cached_tokens"] > 0
    assert error(post(smollm2, {"messages": messages, "return_progress": True}), 400)["param"] == "return_progress"


@pytest.mark.parametrize("path", ["/completion", "/v1/chat/completions"])
def test_timings_on_every_event(smollm2, path):
    """timings_per_token (with return_progress): every event carries llama-server's timings so
    far: the progress events the prompt's reading (none read at first, then all of it, nothing
    generated), the reply's events the tokens generated so far, up to the final timings, which
    count the reply's tokens."""
    text = "Summarize this. " + "The quick brown fox jumps over the lazy dog. " * 20
    body = {"prompt": text, "n_predict": 6} if path == "/completion" else {"messages": [{"role": "user", "content": text}], "max_tokens": 6}
    with httpx.stream("POST", smollm2.base_url + path, timeout=120, json={
            **body, "temperature": 0, "stream": True, "timings_per_token": True, "return_progress": True}) as response:
        events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")]
    progress = [event for event in events if "prompt_progress" in event]
    replies = [event for event in events if "prompt_progress" not in event][1 if path != "/completion" else 0:]
    assert len(progress) >= 2 and progress[0]["timings"]["prompt_n"] == 0 and progress[0]["timings"]["prompt_ms"] == 0
    assert progress[-1]["timings"]["prompt_n"] == progress[-1]["prompt_progress"]["processed"] - progress[-1]["prompt_progress"]["cache"]
    assert all(event["timings"]["predicted_n"] == 0 for event in progress)
    generated = [event["timings"]["predicted_n"] for event in replies]
    assert generated == sorted(generated) and generated[-1] == 6 and generated[0] >= 1
    assert all(event["timings"]["prompt_n"] == progress[-1]["timings"]["prompt_n"] for event in replies)
    assert all(value >= 0 for event in progress + replies for value in event["timings"].values())


def test_reasoning_effort_reaches_the_template(start_server, tmp_path):
    """reasoning_effort as llama-server reads it: "none" turns thinking off, another level
    reaches the chat template as reasoning_effort (gpt-oss's reads it), in chat completions
    and the Responses API's reasoning.effort; an unknown level is refused by name."""
    template = tmp_path / "effort.jinja"
    template.write_text("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
                        "effort={{ reasoning_effort | default('unset') }} thinking={{ enable_thinking | default('unset') }}\n")
    server = start_server("--chat-template-file", str(template))
    def prompt(**fields):
        return post(server, {"messages": [{"role": "user", "content": "Hi"}], **fields}, path="/apply-template").json()["prompt"]
    assert prompt().endswith("effort=unset thinking=unset")
    assert prompt(reasoning_effort="high").endswith("effort=high thinking=True")
    assert prompt(reasoning_effort="none").endswith("effort=unset thinking=False")
    assert error(post(server, {"messages": [{"role": "user", "content": "Hi"}], "reasoning_effort": "extreme"}), 400)["param"] == "reasoning_effort"
    plain = post(server, {"messages": [{"role": "user", "content": "Hi"}]}, path="/v1/chat/completions/input_tokens").json()["input_tokens"]
    for effort, expected in [("low", "effort=low thinking=True"), ("none", "effort=unset thinking=False")]:
        reply = post(server, {"input": "Hi", "reasoning": {"effort": effort}, "max_output_tokens": 2}, path="/v1/responses")
        assert reply.status_code == 200, reply.text
        counted = post(server, {"input": "Hi", "reasoning": {"effort": effort}}, path="/v1/responses/input_tokens").json()["input_tokens"]
        assert prompt(reasoning_effort=effort).endswith(expected)
        chat = post(server, {"messages": [{"role": "user", "content": "Hi"}], "reasoning_effort": effort},
                    path="/v1/chat/completions/input_tokens").json()["input_tokens"]
        assert counted == chat != plain


def test_reasoning_budgets_as_llama_server_reads_them(start_server, tmp_path):
    """reasoning_budget_tokens and thinking_budget_tokens (llama-server's), Anthropic's
    thinking.budget_tokens: -1 leaves the server's budget, 0 renders the template without
    thinking, another count is accepted; a budget that is not a count is refused by name."""
    template = tmp_path / "thinking.jinja"
    template.write_text("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
                        "thinking={{ enable_thinking | default('unset') }}\n")
    server = start_server("--chat-template-file", str(template))
    def prompt(**fields):
        return post(server, {"messages": [{"role": "user", "content": "Hi"}], **fields}, path="/apply-template").json()["prompt"]
    assert prompt(reasoning_budget_tokens=-1).endswith("thinking=unset")
    assert prompt(thinking_budget_tokens=0).endswith("thinking=False")
    assert prompt(reasoning_budget_tokens=64).endswith("thinking=unset")
    for field, value in [("reasoning_budget_tokens", "many"), ("thinking_budget_tokens", -2)]:
        assert error(post(server, {"messages": [{"role": "user", "content": "Hi"}], field: value}), 400)["param"] == field
    reply = post(server, {"messages": [{"role": "user", "content": "Hi"}], "reasoning_budget_tokens": 16, "max_tokens": 4})
    assert reply.status_code == 200, reply.text
    anthropic = post(server, {"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}],
                              "thinking": {"type": "enabled", "budget_tokens": 1024}}, path="/v1/messages")
    assert anthropic.status_code == 200, anthropic.text
