"""`typeset serve` against the real `openai` client: replies, streaming, usage, JSON Schema
replies that validate, tool calls whose arguments validate, completions, concurrency."""
import concurrent.futures
import json
import subprocess

import httpx
import jsonschema
import pytest

from conftest import BINARY, SCHEMAS

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


def ask(client, model, text, **kwargs):
    return client.chat.completions.create(
        model=model, messages=[SYSTEM, {"role": "user", "content": text}], temperature=0, **kwargs)


def test_models_and_health(smollm2):
    models = smollm2.client().models.list()
    assert [model.id for model in models.data] == ["SmolLM2-135M-Instruct.Q4_1"]
    assert httpx.get(smollm2.base_url + "/health").json() == {"status": "ok"}


def test_a_reply_with_its_usage(smollm2):
    reply = ask(smollm2.client(), smollm2.model, "What is the capital of France?", max_tokens=40)
    choice = reply.choices[0]
    assert choice.message.role == "assistant"
    assert "Paris" in choice.message.content
    assert choice.finish_reason in ("stop", "length")
    assert reply.object == "chat.completion" and reply.id.startswith("chatcmpl-")
    usage = reply.usage
    assert usage.prompt_tokens > 10 and 0 < usage.completion_tokens <= 40
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_streaming_gives_the_same_reply(smollm2):
    client = smollm2.client()
    whole = ask(client, smollm2.model, "Name three colors.", max_tokens=30)
    stream = ask(client, smollm2.model, "Name three colors.", max_tokens=30, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == whole.choices[0].message.content
    finishes = [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices and chunk.choices[0].finish_reason]
    assert finishes == [whole.choices[0].finish_reason]
    # The usage comes last, in a chunk without choices.
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert len({chunk.id for chunk in chunks}) == 1


def test_a_stop_sequence_ends_the_reply_before_it(smollm2):
    client = smollm2.client()
    prompt = "Describe the sea in two sentences."
    whole = ask(client, smollm2.model, prompt, max_tokens=40).choices[0].message.content
    # A stop sequence taken from the middle of the greedy reply: the reply ends just before it.
    words = whole.split()
    assert len(words) > 6, whole
    stop = " " + words[4]
    expected = whole[: whole.index(stop)]
    stopped = ask(client, smollm2.model, prompt, max_tokens=40, stop=[stop, "never appears"])
    assert stopped.choices[0].message.content == expected
    assert stopped.choices[0].finish_reason == "stop"
    streamed = ask(client, smollm2.model, prompt, max_tokens=40, stop=stop, stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in streamed) == expected


@pytest.mark.parametrize("path", sorted(SCHEMAS.glob("*.json")), ids=lambda path: path.stem)
def test_json_schema_replies_validate(smollm2, path):
    schema = json.loads(path.read_text())
    reply = ask(smollm2.client(), smollm2.model, f"Produce a realistic example of a {path.stem.replace('_', ' ')}.",
                max_tokens=400, response_format={"type": "json_schema", "json_schema": {"name": path.stem, "schema": schema, "strict": True}})
    assert reply.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(reply.choices[0].message.content), schema)


@pytest.mark.parametrize("schema", [
    # A required item (`contains`) and a required member (a negated `patternProperties`: some
    # note longer than three characters).
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "contains": {"const": "urgent"}, "maxItems": 4}},
     "required": ["tags"], "additionalProperties": False},
    {"type": "object", "patternProperties": {"^note_": {"type": "string", "maxLength": 60}}, "maxProperties": 2,
     "not": {"patternProperties": {"^note_": {"maxLength": 3}}}},
], ids=["contains", "negated-patternProperties"])
def test_required_items_and_members_hold(smollm2, schema):
    reply = ask(smollm2.client(), smollm2.model, "Describe a support ticket as JSON.", max_tokens=120,
                response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})
    assert reply.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(reply.choices[0].message.content), schema)


def test_streamed_schema_replies_validate(smollm2):
    schema = json.loads((SCHEMAS / "brew_summary.json").read_text())
    stream = ask(smollm2.client(), smollm2.model, "Tasting notes: bright, blueberry, a little thin. Summarize the brew.",
                 max_tokens=300, stream=True, response_format={"type": "json_schema", "json_schema": {"name": "brew", "schema": schema}})
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    jsonschema.validate(json.loads(text), schema)


def test_json_object_replies_are_objects(smollm2):
    reply = ask(smollm2.client(), smollm2.model, "Describe a cat as JSON.", max_tokens=200, response_format={"type": "json_object"})
    assert isinstance(json.loads(reply.choices[0].message.content), dict)


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {"name": "get_time", "description": "The local time in a city.",
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
}


@pytest.mark.parametrize("tool_choice", ["required", {"type": "function", "function": {"name": "get_time"}}])
def test_tool_call_arguments_validate(smollm2, tool_choice):
    reply = ask(smollm2.client(), smollm2.model, "What is the weather in Paris?", max_tokens=100,
                tools=[WEATHER, TIME], tool_choice=tool_choice)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.tool_calls
    tools = {tool["function"]["name"]: tool["function"]["parameters"] for tool in (WEATHER, TIME)}
    for call in choice.message.tool_calls:
        assert call.type == "function" and call.id
        jsonschema.validate(json.loads(call.function.arguments), tools[call.function.name])
    if isinstance(tool_choice, dict):
        assert {call.function.name for call in choice.message.tool_calls} == {"get_time"}


def test_streamed_tool_calls(smollm2):
    stream = ask(smollm2.client(), smollm2.model, "What is the weather in Oslo?", max_tokens=100, tools=[WEATHER],
                 tool_choice="required", stream=True)
    calls = [call for chunk in stream if chunk.choices for call in (chunk.choices[0].delta.tool_calls or [])]
    assert calls and calls[0].function.name == "get_weather"
    arguments = "".join(call.function.arguments or "" for call in calls if call.index == 0)
    jsonschema.validate(json.loads(arguments), WEATHER["function"]["parameters"])


@pytest.mark.parametrize("model", ["qwen", "smollm2"])
def test_tool_call_arguments_stream_as_they_are_written(request, model):
    """As OpenAI and llama-server stream them: the call's id, type and name first with empty
    arguments, then the arguments in pieces; joined (as the client's own stream helper joins
    them) they are the arguments of the same request answered whole."""
    server = request.getfixturevalue(model)
    client = server.client()
    arguments = dict(model=server.model, messages=[{"role": "user", "content": "What is the weather in Oslo, in celsius?"}],
                     tools=[WEATHER], tool_choice="required", temperature=0, max_tokens=100)
    whole = client.chat.completions.create(**arguments).choices[0].message.tool_calls[0]
    deltas = [call for chunk in client.chat.completions.create(**arguments, stream=True) if chunk.choices
              for call in (chunk.choices[0].delta.tool_calls or [])]
    first, rest = deltas[0], deltas[1:]
    assert first.index == 0 and first.id == whole.id and first.type == "function"
    assert first.function.name == "get_weather" and first.function.arguments == ""
    assert len(rest) > 2 and all(delta.index == 0 and delta.id is None and delta.function.name is None for delta in rest)
    assert "".join(delta.function.arguments for delta in rest) == whole.function.arguments
    with client.chat.completions.stream(**arguments) as stream:
        final = stream.get_final_completion().choices[0].message.tool_calls[0]
    assert (final.id, final.function.name, final.function.arguments) == (whole.id, whole.function.name, whole.function.arguments)
    assert json.loads(final.function.arguments)["city"] == "Oslo"


def test_a_tool_result_round_trip(qwen):
    """The call, its result sent back, and an answer that uses it (tool_choice "none": the
    0.5B model would otherwise call again; the 1.5B model answers on its own)."""
    client = qwen.client()
    messages = [{"role": "user", "content": "What is the weather in Paris right now?"}]
    first = client.chat.completions.create(model=qwen.model, messages=messages, tools=[WEATHER], temperature=0, max_tokens=100)
    call = first.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments)["city"] == "Paris"
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "18 degrees Celsius and sunny"}]
    second = client.chat.completions.create(model=qwen.model, messages=messages, tools=[WEATHER], tool_choice="none",
                                            temperature=0, max_tokens=60)
    answer = second.choices[0].message
    assert not answer.tool_calls and second.choices[0].finish_reason == "stop"
    assert "18" in answer.content


def test_tools_with_a_schema_give_a_value_or_a_call(smollm2):
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    reply = ask(smollm2.client(), smollm2.model, "What is the weather in Rome?", max_tokens=120, tools=[WEATHER], tool_choice="required",
                response_format={"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}})
    call = reply.choices[0].message.tool_calls[0]
    jsonschema.validate(json.loads(call.function.arguments), WEATHER["function"]["parameters"])


def test_logprobs(smollm2):
    reply = ask(smollm2.client(), smollm2.model, "Say hello.", max_tokens=8, logprobs=True, top_logprobs=3)
    entries = reply.choices[0].logprobs.content
    assert "".join(entry.token for entry in entries) == reply.choices[0].message.content
    for entry in entries:
        assert entry.logprob <= 0 and len(entry.top_logprobs) == 3
        # Greedy: the chosen token is the most likely one.
        assert entry.top_logprobs[0].logprob == pytest.approx(entry.logprob)
        assert [alternative.logprob for alternative in entry.top_logprobs] == sorted((a.logprob for a in entry.top_logprobs), reverse=True)


def test_completions(smollm2):
    client = smollm2.client()
    whole = client.completions.create(model=smollm2.model, prompt="The capital of France is", max_tokens=8, temperature=0, logprobs=2)
    assert whole.object == "text_completion" and whole.choices[0].text.startswith(" Paris")
    assert whole.usage.completion_tokens == 8 and whole.choices[0].finish_reason == "length"
    assert len(whole.choices[0].logprobs.tokens) == 8
    streamed = client.completions.create(model=smollm2.model, prompt="The capital of France is", max_tokens=8, temperature=0, stream=True)
    assert "".join(chunk.choices[0].text for chunk in streamed if chunk.choices) == whole.choices[0].text


def test_tokenize_round_trip(smollm2):
    tokens = httpx.post(smollm2.base_url + "/tokenize", json={"content": "Bonjour, 世界"}).json()["tokens"]
    assert all(isinstance(token, int) for token in tokens)
    assert httpx.post(smollm2.base_url + "/detokenize", json={"tokens": tokens}).json()["content"] == "Bonjour, 世界"


PROMPTS = ["What is rain?", "Name three fruits.", "Write a haiku about tea.", "What is 2 + 2?", "Describe a dog.", "What is a star?"]


def test_concurrent_clients_get_the_replies_they_would_get_alone(smollm2):
    client = smollm2.client()
    schema = json.loads((SCHEMAS / "city_fact.json").read_text())

    def one(index):
        kwargs = {"max_tokens": 48, "seed": index}
        if index == 2:
            kwargs.update(max_tokens=200, response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": schema}})
        reply = ask(client, smollm2.model, PROMPTS[index], **kwargs)
        return reply.choices[0].message.content, reply.choices[0].finish_reason

    alone = [one(index) for index in range(len(PROMPTS))]
    before = smollm2.metrics()
    with concurrent.futures.ThreadPoolExecutor(len(PROMPTS)) as pool:
        together = list(pool.map(one, range(len(PROMPTS))))
    assert together == alone
    after = smollm2.metrics()
    # They shared forward passes: fewer passes than the tokens generated.
    passes = after["typeset_forward_passes_total"] - before["typeset_forward_passes_total"]
    tokens = after["typeset_completion_tokens_total"] - before["typeset_completion_tokens_total"]
    assert passes < tokens * 0.7


def test_metrics_are_prometheus_text(smollm2):
    text = httpx.get(smollm2.base_url + "/metrics").text
    for name in ["typeset_requests_total", "typeset_queue_depth", "typeset_batch_size", "typeset_grammar_compile_seconds_total",
                 "typeset_grammar_mask_seconds_total", "typeset_time_to_first_token_seconds_bucket", "typeset_completion_tokens_total"]:
        assert f"# TYPE {name.removesuffix('_bucket')}" in text or f"# TYPE {name}" in text, name
    metrics = smollm2.metrics()
    assert metrics['typeset_requests_total{route="/v1/chat/completions",status="200"}'] > 0


@pytest.mark.parametrize("flags", [("--lookup",), ("--draft", "smollm2")], ids=["lookup", "draft-model"])
def test_drafts_give_the_same_replies_in_fewer_passes(smollm2, start_server, flags):
    """`typeset serve --lookup` and `--draft MODEL` (here the model drafting for itself, so its
    drafts are right): every reply as without them (plain, sampled with a seed, under a JSON
    Schema, several at once), the drafted and kept tokens counted in /metrics, and a reply
    that copies from its prompt taking fewer passes than tokens."""
    drafted = start_server(*flags)
    copying = ("Repeat this list exactly: Maria Okafor, order A-20931, 14 Elm Street, Springfield; "
               "Li Wei, order B-77120, 3 Harbour Road, Portsmouth.")
    schema = json.loads((SCHEMAS / "city_fact.json").read_text())
    requests = [
        (copying, {"max_tokens": 60}),
        (PROMPTS[0], {"max_tokens": 40}),
        (PROMPTS[1], {"max_tokens": 40, "temperature": 0.8, "seed": 5}),
        (PROMPTS[2], {"max_tokens": 200, "response_format": {"type": "json_schema", "json_schema": {"name": "city", "schema": schema}}}),
    ]

    def one(server, index):
        text, kwargs = requests[index]
        kwargs = {"temperature": 0, **kwargs}
        reply = server.client().chat.completions.create(
            model=server.model, messages=[SYSTEM, {"role": "user", "content": text}], **kwargs)
        return reply.choices[0].message.content, reply.choices[0].finish_reason

    plain = [one(smollm2, index) for index in range(len(requests))]
    before = drafted.metrics()
    alone = [one(drafted, index) for index in range(len(requests))]
    after = drafted.metrics()
    assert alone == plain
    jsonschema.validate(json.loads(alone[3][0]), schema)
    kept = after["typeset_accepted_draft_tokens_total"] - before["typeset_accepted_draft_tokens_total"]
    assert after["typeset_drafted_tokens_total"] - before["typeset_drafted_tokens_total"] >= kept >= 10
    with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
        together = list(pool.map(lambda index: one(drafted, index), range(len(requests))))
    assert together == plain
    # The copying reply alone: fewer passes than the tokens it generated.
    before = drafted.metrics()
    one(drafted, 0)
    after = drafted.metrics()
    passes = after["typeset_forward_passes_total"] - before["typeset_forward_passes_total"]
    tokens = after["typeset_completion_tokens_total"] - before["typeset_completion_tokens_total"]
    assert passes < tokens * 0.8, (passes, tokens)


@pytest.mark.parametrize("draft, message", [
    ("gemma3", "the draft model's vocabulary has 262144 tokens and the model's 49152"),
    ("/nonexistent/draft.gguf", "no model file at /nonexistent/draft.gguf"),
])
def test_a_draft_model_that_cannot_draft_stops_the_server_at_load(draft, message):
    """A draft of another vocabulary or a missing file: the server says so and exits before
    serving a request, not at the first one."""
    finished = subprocess.run([str(BINARY), "serve", "--model", "smollm2", "--port", "0", "--draft", draft],
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode != 0
    assert message in finished.stderr, finished.stderr
