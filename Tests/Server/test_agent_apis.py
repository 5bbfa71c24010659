"""The agent APIs: OpenAI's Responses API and Anthropic's Messages API, driven by the real
`openai` and `anthropic` clients. Each reply is checked against the chat-completions reply to
the same conversation (greedy decoding gives the same text), each typed value and each tool's
arguments against its JSON Schema (jsonschema), and each stream against the whole reply."""
import json

import anthropic
import httpx
import jsonschema
import openai
import pydantic
import pytest

from test_limits import error, post

SYSTEM = "You are a helpful assistant."
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
           "required": ["city", "unit"], "additionalProperties": False}
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
          "required": ["name", "age"], "additionalProperties": False}
EXTRACTION = "Extract the person: Maria Okafor, 34, joined the team in May."


def chat_reply(server, messages, **fields):
    """The chat-completions reply to `messages`, greedy: the reference the other APIs must match."""
    response = post(server, {"messages": messages, "temperature": 0, **fields})
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]


# MARK: OpenAI's Responses API

def test_responses_text_matches_chat(smollm2):
    client = smollm2.client()
    for limit in [8, 200]:
        response = client.responses.create(model="gpt-4.1", instructions=SYSTEM, input="Name three colours.",
                                           max_output_tokens=limit, temperature=0)
        reference = chat_reply(smollm2, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Name three colours."}],
                               max_tokens=limit)
        assert response.id.startswith("resp_") and response.object == "response"
        assert response.output[0].type == "message" and response.output[0].id.startswith("msg_")
        assert response.output_text == reference["message"]["content"]
        cut = reference["finish_reason"] == "length"
        assert response.status == ("incomplete" if cut else "completed")
        assert (response.incomplete_details.reason if cut else response.incomplete_details) == ("max_output_tokens" if cut else None)
        assert response.usage.output_tokens == (limit if cut else response.usage.output_tokens)
        assert response.instructions == SYSTEM and response.max_output_tokens == limit
    # Items in place of a string: the same conversation.
    items = client.responses.create(model="m", input=[
        {"role": "developer", "content": SYSTEM},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Name three colours."}]},
    ], max_output_tokens=8, temperature=0)
    assert items.output_text == client.responses.create(model="m", instructions=SYSTEM, input="Name three colours.",
                                                        max_output_tokens=8, temperature=0).output_text


def test_responses_stream(smollm2):
    """The events in OpenAI's order, numbered, their text adding up to the whole reply; the
    client's own stream helper (which indexes items by output_index) assembles the same. A
    reply the limit cuts ends with `response.incomplete`, as OpenAI's does."""
    client = smollm2.client()
    for limit in [200, 4]:
        whole = client.responses.create(model="m", input="Say hello.", max_output_tokens=limit, temperature=0)
        assert whole.status == ("completed" if limit == 200 else "incomplete")
        events = list(client.responses.create(model="m", input="Say hello.", max_output_tokens=limit, temperature=0, stream=True))
        assert [event.sequence_number for event in events] == list(range(len(events)))
        types = [event.type for event in events]
        assert types[:4] == ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
        assert types[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                              "response.completed" if limit == 200 else "response.incomplete"]
        message_id = events[2].item.id
        deltas = [event for event in events if event.type == "response.output_text.delta"]
        assert deltas and all(event.item_id == message_id and event.output_index == 0 for event in deltas)
        text = "".join(event.delta for event in deltas)
        assert text == whole.output_text == events[-1].response.output_text
        assert events[-1].response.usage.output_tokens == whole.usage.output_tokens
        assert events[-1].response.status == whole.status
    with client.responses.stream(model="m", input="Say hello.", max_output_tokens=200, temperature=0) as stream:
        assert stream.get_final_response().output_text == client.responses.create(
            model="m", input="Say hello.", max_output_tokens=200, temperature=0).output_text


class Person(pydantic.BaseModel):
    name: str
    age: int


def test_responses_typed_value(qwen):
    """`text.format` holds the reply to the schema: the client's own parse() gets the value."""
    client = qwen.client()
    parsed = client.responses.parse(model="m", input=EXTRACTION, text_format=Person, temperature=0)
    assert parsed.output_parsed == Person(name="Maria Okafor", age=34)
    raw = client.responses.create(model="m", input=EXTRACTION, temperature=0, text={
        "format": {"type": "json_schema", "name": "person", "schema": PERSON, "strict": True}})
    jsonschema.validate(json.loads(raw.output_text), PERSON)
    assert raw.text.format.type == "json_schema"
    streamed = "".join(event.delta for event in client.responses.create(
        model="m", input=EXTRACTION, temperature=0, stream=True,
        text={"format": {"type": "json_schema", "name": "person", "schema": PERSON}}) if event.type == "response.output_text.delta")
    assert streamed == raw.output_text


def test_responses_tool_calls(qwen):
    """A required call: a function_call item whose arguments validate against the tool's
    schema, streamed as OpenAI streams it; its output sent back as items gets a message."""
    client = qwen.client()
    tools = [{"type": "function", "name": "get_weather", "description": "The weather in a city.", "parameters": WEATHER}]
    question = "What is the weather in Oslo, in celsius?"
    response = client.responses.create(model="m", input=question, tools=tools, tool_choice="required", temperature=0)
    calls = [item for item in response.output if item.type == "function_call"]
    assert len(calls) >= 1 and calls[0].name == "get_weather" and calls[0].id.startswith("fc_")
    arguments = json.loads(calls[0].arguments)
    jsonschema.validate(arguments, WEATHER)
    assert arguments["city"] == "Oslo"
    events = list(client.responses.create(model="m", input=question, tools=tools, tool_choice="required", temperature=0, stream=True))
    added = [event for event in events if event.type == "response.output_item.added" and event.item.type == "function_call"]
    done = [event for event in events if event.type == "response.function_call_arguments.done"]
    assert added and done and json.loads(done[0].arguments) == arguments
    # The arguments stream as they are written: several deltas, joined the done event's.
    pieces = [event.delta for event in events if event.type == "response.function_call_arguments.delta"]
    assert len(pieces) > 2 and "".join(pieces) == done[0].arguments == calls[0].arguments
    assert events[-1].response.output[-1].call_id == calls[0].call_id
    follow_up = client.responses.create(model="m", tools=tools, tool_choice="none", temperature=0, max_output_tokens=40, input=[
        {"role": "user", "content": question},
        {"type": "function_call", "call_id": calls[0].call_id, "name": "get_weather", "arguments": calls[0].arguments},
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": '{"temperature": 21, "sky": "clear"}'},
    ])
    assert follow_up.output_text
    # Each input item as the chat message it stands for: the same prompt.
    counted = post(qwen, {"input": [{"role": "user", "content": question},
                                    {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Oslo", "unit": "celsius"}'},
                                    {"type": "function_call_output", "call_id": "call_1", "output": "21"}], "tools": tools},
                   path="/v1/responses/input_tokens").json()["input_tokens"]
    reference = post(qwen, {"messages": [
        {"role": "user", "content": question},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Oslo", "unit": "celsius"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "21"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.", "parameters": WEATHER}}]},
        path="/v1/chat/completions/input_tokens").json()["input_tokens"]
    assert counted == reference


@pytest.mark.parametrize("fields, parameter", [
    ({"previous_response_id": "resp_123"}, "previous_response_id"),
    ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "https://example.com/a.png"}]}]}, "input[0].content[0].type"),
    ({"text": {"format": {"type": "json_schema", "name": "x", "schema": {
        "type": "array", "items": {"type": "string"}, "contains": {"const": "x"}, "maxContains": 1}}}}, "text.format"),
    ({"truncation": "auto"}, "truncation"),
    ({"background": True}, "background"),
    ({"input": "Hi", "frequency_penalty_typo": 1}, "frequency_penalty_typo"),
])
def test_responses_refusals(smollm2, fields, parameter):
    assert error(post(smollm2, {"input": "Hi", **fields}, path="/v1/responses"), 400)["param"] == parameter


def test_responses_defaults_are_accepted(smollm2):
    """What clients send by default asks for nothing: store, an empty include, a reasoning
    summary, the default verbosity and truncation."""
    response = post(smollm2, {"input": "Hi", "max_output_tokens": 4, "store": True, "include": [], "metadata": {},
                              "reasoning": {"effort": None, "summary": "auto"}, "text": {"verbosity": "medium"},
                              "truncation": "disabled", "previous_response_id": None, "stream_options": None},
                    path="/v1/responses")
    assert response.status_code == 200, response.text


# MARK: Anthropic's Messages API

def anthropic_client(server, **kwargs):
    return anthropic.Anthropic(base_url=server.base_url, api_key="unused", max_retries=0, **kwargs)


# Anthropic's client of 2026 has no sampling parameters (its models choose their own); the
# server reads `temperature` as llama-server does, sent here as an extra field.
GREEDY = {"extra_body": {"temperature": 0}}


def test_messages_text_matches_chat(smollm2):
    client = anthropic_client(smollm2)
    for limit in [8, 200]:
        message = client.messages.create(model="claude-sonnet-4-5", max_tokens=limit, system=SYSTEM, **GREEDY,
                                         messages=[{"role": "user", "content": "Name three colours."}])
        reference = chat_reply(smollm2, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Name three colours."}],
                               max_tokens=limit)
        assert message.type == "message" and message.role == "assistant" and message.id.startswith("msg_")
        assert [block.type for block in message.content] == ["text"]
        assert message.content[0].text == reference["message"]["content"]
        assert message.stop_reason == ("max_tokens" if reference["finish_reason"] == "length" else "end_turn")
        assert message.usage.output_tokens > 0 and message.usage.input_tokens > 0
    # Blocks in place of strings: the same conversation.
    blocks = client.messages.create(model="m", max_tokens=8, **GREEDY, system=[{"type": "text", "text": SYSTEM}],
                                    messages=[{"role": "user", "content": [{"type": "text", "text": "Name three "},
                                                                           {"type": "text", "text": "colours."}]}])
    assert blocks.content[0].text == client.messages.create(
        model="m", max_tokens=8, **GREEDY, system=SYSTEM, messages=[{"role": "user", "content": "Name three colours."}]).content[0].text


def test_messages_stop_sequence(smollm2):
    client = anthropic_client(smollm2)
    whole = client.messages.create(model="m", max_tokens=40, **GREEDY, messages=[{"role": "user", "content": "Count from 1 to 9."}])
    text = whole.content[0].text
    stop = next(character for character in "56789," if character in text)
    cut = client.messages.create(model="m", max_tokens=40, **GREEDY, stop_sequences=[stop],
                                 messages=[{"role": "user", "content": "Count from 1 to 9."}])
    assert (cut.stop_reason, cut.stop_sequence) == ("stop_sequence", stop)
    assert cut.content[0].text == text[:text.index(stop)]


def test_messages_stream(smollm2):
    """Anthropic's event sequence, its text adding up to the whole reply, read by the client's
    own stream helper."""
    client = anthropic_client(smollm2)
    request = dict(model="m", max_tokens=24, **GREEDY, messages=[{"role": "user", "content": "Say hello."}])
    whole = client.messages.create(**request)
    events = list(client.messages.create(**request, stream=True))
    types = [event.type for event in events]
    assert types[0] == "message_start" and types[1] == "content_block_start"
    assert types[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(types[2:-3]) == {"content_block_delta"}
    start = events[0].message
    assert start.content == [] and start.usage.input_tokens == whole.usage.input_tokens + whole.usage.cache_read_input_tokens
    assert events[-2].delta.stop_reason == whole.stop_reason and events[-2].usage.output_tokens == whole.usage.output_tokens
    with client.messages.stream(**request) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == final.content[0].text == whole.content[0].text


def test_messages_typed_value(qwen):
    """`output_config.format` holds the reply to the schema."""
    client = anthropic_client(qwen)
    message = client.messages.create(model="m", max_tokens=200, **GREEDY, messages=[{"role": "user", "content": EXTRACTION}],
                                     output_config={"format": {"type": "json_schema", "schema": PERSON}})
    value = json.loads(message.content[0].text)
    jsonschema.validate(value, PERSON)
    assert value == {"name": "Maria Okafor", "age": 34}


def test_messages_tool_use(qwen):
    """A call the reply must make: a tool_use block whose input validates, streamed as
    input_json_delta; the tool's result sent back gets a text reply."""
    client = anthropic_client(qwen)
    tools = [{"name": "get_weather", "description": "The weather in a city.", "input_schema": WEATHER}]
    question = [{"role": "user", "content": "What is the weather in Oslo, in celsius?"}]
    message = client.messages.create(model="m", max_tokens=200, **GREEDY, tools=tools, tool_choice={"type": "any"}, messages=question)
    assert message.stop_reason == "tool_use"
    uses = [block for block in message.content if block.type == "tool_use"]
    assert uses and uses[0].name == "get_weather"
    jsonschema.validate(uses[0].input, WEATHER)
    assert uses[0].input["city"] == "Oslo"
    with client.messages.stream(model="m", max_tokens=200, **GREEDY, tools=tools, tool_choice={"type": "any"}, messages=question) as stream:
        events = list(stream)
        final = stream.get_final_message()
    assert any(event.type == "content_block_start" and event.content_block.type == "tool_use" for event in events)
    # The input streams as it is written: several input_json_delta pieces, joined the input.
    pieces = [event.delta.partial_json for event in events if event.type == "content_block_delta" and event.delta.type == "input_json_delta"]
    assert len(pieces) > 2 and json.loads("".join(pieces)) == uses[0].input
    assert [block.input for block in final.content if block.type == "tool_use"] == [use.input for use in uses]
    answer = client.messages.create(model="m", max_tokens=60, **GREEDY, tools=tools, tool_choice={"type": "none"}, messages=question + [
        {"role": "assistant", "content": [{"type": "tool_use", "id": uses[0].id, "name": "get_weather", "input": uses[0].input}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": "21 degrees, clear sky"}]},
    ])
    assert answer.content[0].type == "text" and answer.content[0].text


def test_messages_count_tokens(qwen):
    """The prompt's length, as the chat endpoint counts the same conversation and as the reply
    reports it."""
    client = anthropic_client(qwen)
    conversation = [{"role": "user", "content": "What is the weather?"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oslo"}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "Sunny"},
                                                 {"type": "text", "text": "Thanks. And tomorrow?"}]}]
    tools = [{"name": "get_weather", "description": "The weather in a city.", "input_schema": WEATHER}]
    counted = client.messages.count_tokens(model="m", system=SYSTEM, messages=conversation, tools=tools).input_tokens
    reference = post(qwen, {"messages": [
        {"role": "system", "content": SYSTEM}, {"role": "user", "content": "What is the weather?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "Sunny"},
        {"role": "user", "content": "Thanks. And tomorrow?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.", "parameters": WEATHER}}]},
        path="/v1/chat/completions/input_tokens").json()["input_tokens"]
    assert counted == reference
    reply = client.messages.create(model="m", max_tokens=4, system=SYSTEM, messages=conversation, tools=tools)
    assert reply.usage.input_tokens + reply.usage.cache_read_input_tokens == counted


@pytest.mark.parametrize("message, text", [
    ([{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}], "text only"),
    ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}]},
      {"role": "user", "content": "And?"}], "redacted_thinking"),
    ([], "at least one message"),
])
def test_messages_refusals_in_anthropics_shape(smollm2, message, text):
    with pytest.raises(anthropic.BadRequestError) as refused:
        anthropic_client(smollm2).messages.create(model="m", max_tokens=8, messages=message)
    assert refused.value.body["type"] == "error" and refused.value.body["error"]["type"] == "invalid_request_error"
    assert text in refused.value.body["error"]["message"]
    hosted = post(smollm2, {"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}],
                            "tools": [{"type": "web_search_20250305", "name": "web_search"}]}, path="/v1/messages")
    assert hosted.status_code == 400 and "hosted tool" in hosted.json()["error"]["message"]


def test_messages_api_key(start_server):
    """Anthropic's client sends the key as X-Api-Key."""
    server = start_server("--api-key", "secret")
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(base_url=server.base_url, api_key="wrong", max_retries=0).messages.create(
            model="m", max_tokens=2, messages=[{"role": "user", "content": "Hi"}])
    message = anthropic.Anthropic(base_url=server.base_url, api_key="secret", max_retries=0).messages.create(
        model="m", max_tokens=2, messages=[{"role": "user", "content": "Hi"}])
    assert message.usage.output_tokens == 2
