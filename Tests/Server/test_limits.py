"""What `typeset serve` refuses, and how it holds up: 4xx errors that name the field or the
schema keyword at fault (never an unconstrained reply), the API key, capacity, size and time
limits, a client that goes away, and SIGTERM finishing the requests in flight."""
import json
import signal
import socket
import threading
import time

import httpx
import openai
import pytest

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


def post(server, body, path="/v1/chat/completions", **kwargs):
    return httpx.post(server.base_url + path, json=body, timeout=120, **kwargs)


def chat(text="Hello", **fields):
    return {"messages": [SYSTEM, {"role": "user", "content": text}], **fields}


def error(response, status):
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["message"] and body["type"]
    return body


@pytest.mark.parametrize("schema, keyword, pointer", [
    ({"type": "array", "items": {"type": "string"}, "contains": {"const": "x"}, "maxContains": 1}, "maxContains", "#"),
    ({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True, "items": {"type": "object"}}}},
     "uniqueItems", "#/properties/tags"),
    ({"type": "string", "format": "not-a-format"}, "format", "#"),
])
def test_a_schema_that_cannot_be_enforced_is_refused(smollm2, schema, keyword, pointer):
    """Fail closed: never a 200 with output the schema does not hold."""
    body = error(post(smollm2, chat(response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})), 400)
    assert body["param"] == "response_format" and body["code"] == "unsupported_schema"
    assert f"'{keyword}'" in body["message"] and pointer in body["message"]
    # The same through the client: an exception, not a reply.
    with pytest.raises(openai.BadRequestError):
        smollm2.client().chat.completions.create(
            model=smollm2.model, messages=[{"role": "user", "content": "hi"}],
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}, stream=True)


def _cross_product(count):
    return {"allOf": [{"anyOf": [{"type": "object", "properties": {f"a{i}": {"type": "integer"}}},
                                 {"type": "object", "properties": {f"b{i}": {"type": "string"}}}]} for i in range(count)]}


@pytest.mark.parametrize("schema, words", [
    (_cross_product(20), "compilation budget exceeded"),
    ({"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(100_000)},
      "required": [f"p{i}" for i in range(100_000)]}, "compilation budget exceeded"),
    # 2^17 subsets that stay distinct: the automaton's state budget.
    ({"type": "string", "pattern": "^(a|b)*a(a|b){16}$"}, "compilation budget exceeded"),
])
def test_a_schema_past_the_compile_budget_is_refused_at_once(smollm2, schema, words):
    """A hostile schema is a 400 within about the compile budget (2 s), not a stalled server."""
    started = time.monotonic()
    body = error(post(smollm2, chat(max_tokens=16, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})), 400)
    assert time.monotonic() - started < 10
    assert body["param"] == "response_format" and words in body["message"]


def test_a_max_tokens_no_value_fits_is_refused(smollm2):
    schema = {"type": "array", "minItems": 2000, "items": {"type": "integer"}}
    body = error(post(smollm2, chat(max_tokens=64, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})), 400)
    assert body["param"] == "max_tokens" and body["code"] == "max_tokens_too_small"
    assert "shortest value takes" in body["message"]


def test_a_lone_surrogate_is_refused(smollm2):
    """A value holding one cannot be written as UTF-8: a 400, not output that fails validation."""
    response = httpx.post(smollm2.base_url + "/v1/chat/completions", timeout=60, headers={"Content-Type": "application/json"},
                          content=b'{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema",'
                                  b'"json_schema":{"name":"x","schema":{"const":"\\ud800"}}}}')
    assert "unpaired high surrogate" in error(response, 400)["message"]


def test_a_tool_whose_parameters_cannot_be_enforced_is_refused(smollm2):
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "string", "format": "nope"}}}}}
    body = error(post(smollm2, chat(tools=[tool])), 400)
    assert "format" in body["message"]


@pytest.mark.parametrize("fields, parameter", [
    ({"n": 17}, "n"),
    ({"n": 2, "stream": True, "return_progress": True}, "return_progress"),
    ({"temperature": 3}, "temperature"),
    ({"top_p": -1}, "top_p"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"frequency_penalty": 2.5}, "frequency_penalty"),
    ({"logit_bias": {"42": 200}}, "logit_bias.42"),
    ({"logit_bias": {"4200000": -5}}, "logit_bias"),
    ({"logit_bias": {"42": 5}, "response_format": {"type": "json_object"}}, "logit_bias"),
    ({"stop": ["a"], "response_format": {"type": "json_object"}}, "stop"),
    ({"top_logprobs": 2}, "top_logprobs"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"stream_options": {"include_usage": True}}, "stream_options"),
])
def test_fields_it_cannot_honour_are_named(smollm2, fields, parameter):
    assert error(post(smollm2, chat(**fields)), 400)["param"] == parameter


def test_malformed_requests(smollm2):
    assert error(post(smollm2, {"messages": []}), 400)["param"] == "messages"
    assert error(post(smollm2, {"messages": [{"role": "robot", "content": "beep"}]}), 400)["param"] == "messages[0]"
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x"}}]}
    assert "text" in error(post(smollm2, {"messages": [image]}), 400)["message"]
    response = httpx.post(smollm2.base_url + "/v1/chat/completions", content=b"{not json", timeout=30)
    assert error(response, 400)["param"] == "body"
    assert httpx.get(smollm2.base_url + "/nowhere", timeout=30).status_code == 404


def test_a_prompt_longer_than_the_context(start_server):
    server = start_server("--context", "64")
    body = error(post(server, chat("tell me a story " * 40)), 400)
    assert body["code"] == "context_length_exceeded"


def test_a_body_over_the_limit(start_server):
    server = start_server("--max-body-bytes", "2000")
    error(post(server, chat("x" * 5000)), 413)
    assert post(server, chat("hi", max_tokens=2)).status_code == 200


def test_the_api_key(start_server):
    server = start_server("--api-key", "s3cret")
    assert error(post(server, chat(max_tokens=2)), 401)["code"] == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        server.client(api_key="wrong").models.list()
    assert server.client(api_key="s3cret").chat.completions.create(
        model="SmolLM2-135M-Instruct.Q4_1", messages=[{"role": "user", "content": "hi"}], max_tokens=2).choices
    # Health stays open, for load balancers.
    assert httpx.get(server.base_url + "/health").status_code == 200


def test_a_full_queue_answers_429(start_server):
    server = start_server("--parallel", "1", "--queue", "0")
    long = chat("Write a long story about a lighthouse.", max_tokens=200)
    first = threading.Thread(target=post, args=(server, long))
    first.start()
    deadline = time.monotonic() + 30
    while server.metrics()["typeset_requests_in_flight"] < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    body = error(post(server, chat(max_tokens=2)), 429)
    assert body["type"] == "rate_limit_error"
    first.join()
    assert server.metrics()["typeset_requests_rejected_total"] == 1
    assert post(server, chat(max_tokens=2)).status_code == 200


def test_a_request_past_its_time(start_server):
    server = start_server("--timeout", "0.5")
    started = time.monotonic()
    error(post(server, chat("Write a long story about a lighthouse.", max_tokens=2000)), 504)
    assert time.monotonic() - started < 10


def test_a_client_that_disconnects_stops_its_generation(smollm2):
    """Within a token: the completion counter stops far short of the budget."""
    before = smollm2.metrics()["typeset_completion_tokens_total"]
    body = json.dumps(chat("Write a very long essay about the history of tea.", max_tokens=3000, stream=True)).encode()
    connection = socket.create_connection(("127.0.0.1", smollm2.port))
    connection.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    received = b""
    while received.count(b"data: ") < 6:
        received += connection.recv(65536)
    connection.close()
    deadline = time.monotonic() + 10
    while smollm2.metrics()["typeset_requests_in_flight"] > 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    metrics = smollm2.metrics()
    assert metrics["typeset_requests_in_flight"] == 0 and metrics["typeset_active_generations"] == 0
    assert metrics["typeset_completion_tokens_total"] - before < 100


def test_a_non_streaming_client_that_disconnects_stops_its_generation(smollm2):
    before = smollm2.metrics()["typeset_completion_tokens_total"]
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(smollm2.base_url + "/v1/chat/completions", json=chat("Write a very long essay about tea.", max_tokens=3000), timeout=0.5)
    deadline = time.monotonic() + 10
    while smollm2.metrics()["typeset_requests_in_flight"] > 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert smollm2.metrics()["typeset_requests_in_flight"] == 0
    # Half a second of decoding at well under 1,000 tokens a second.
    assert smollm2.metrics()["typeset_completion_tokens_total"] - before < 1000


def test_sigterm_finishes_the_requests_in_flight(start_server):
    server = start_server()
    client = server.client()
    stream = client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", messages=[SYSTEM, {"role": "user", "content": "Tell me about the sea."}],
                                            max_tokens=60, temperature=0, stream=True)
    chunks = [next(stream)]
    server.process.send_signal(signal.SIGTERM)
    chunks += list(stream)
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")
    assert server.process.wait(30) == 0
    # It no longer listens.
    with pytest.raises(httpx.TransportError):
        httpx.get(server.base_url + "/health", timeout=5)


def test_health_is_503_while_the_model_loads(start_server):
    """The largest model takes a second or more to map and pack; the server listens at once."""
    server = start_server(model="qwen1.5b", ready=False)
    response = httpx.get(server.base_url + "/health", timeout=5)
    assert response.status_code == 503 and response.json()["status"] == "loading"
    early = post(server, chat(max_tokens=2))
    assert early.status_code == 200 or error(early, 503)["code"] == "model_loading"
    server.wait_until_ready()
    assert httpx.get(server.base_url + "/health", timeout=5).json() == {"status": "ok"}


def test_a_grammar_cache_directory_outlives_the_server(start_server, tmp_path):
    """A schema compiled by one server loads from --grammar-cache in the next, which replies
    the same (greedy); a corrupted file is refused, rebuilt, and the reply still validates."""
    import jsonschema

    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 4000}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
              "required": ["city", "days"], "additionalProperties": False}
    body = chat("Weather in Oslo for 3 days, as JSON.", max_tokens=48, temperature=0,
                response_format={"type": "json_schema", "json_schema": {"name": "forecast", "schema": schema, "strict": True}})
    directory = str(tmp_path / "grammars")
    replies = []
    for round in range(3):
        server = start_server("--grammar-cache", directory)
        response = post(server, body)
        assert response.status_code == 200, response.text
        content = response.json()["choices"][0]["message"]["content"]
        jsonschema.validate(json.loads(content), schema)
        replies.append(content)
        metrics = server.metrics()
        if round == 0:
            assert metrics["typeset_grammar_archive_loads_total"] == 0
            assert len(list((tmp_path / "grammars").glob("*.grammar"))) == 1
        elif round == 1:
            assert metrics["typeset_grammar_archive_loads_total"] == 1
            for file in (tmp_path / "grammars").glob("*.grammar"):
                file.write_bytes(file.read_bytes()[:-10])
        else:
            assert metrics["typeset_grammar_archive_loads_total"] == 0
            assert metrics["typeset_grammar_archives_rejected_total"] == 1
        server.stop()
    assert replies[0] == replies[1] == replies[2]
