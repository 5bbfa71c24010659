"""Embeddings over HTTP: OpenAI's `POST /v1/embeddings` through the real `openai` client, and
llama-server's `/embeddings`, each vector checked against llama.cpp's embeddings of the same
text and model (recorded by Fixtures/make_embedding_fixtures.py), not only against a 200."""
import json
import math
import struct
import threading
from pathlib import Path

import httpx
import pytest

from test_limits import error, post

FIXTURE = json.loads((Path(__file__).resolve().parents[2] / "Fixtures" / "generation" / "smollm2.embeddings.json").read_text())
TEXTS = FIXTURE["texts"]


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def unit(vector):
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def embed(server, path="/v1/embeddings", **body):
    return httpx.post(server.base_url + path, json=body, timeout=120)


@pytest.fixture(scope="module")
def mean_server():
    from conftest import Server
    server = Server("smollm2", "--pooling", "mean", "--context", "1024").wait_until_ready()
    yield server
    server.stop()


def test_openai_client_gets_llama_cpps_vectors(mean_server):
    """The client asks for base64 (its default) and decodes it; each vector is unit length and
    points where llama.cpp's mean-pooled embedding of the same text points."""
    client = mean_server.client()
    texts = [entry["text"] for entry in TEXTS]
    result = client.embeddings.create(model="text-embedding-3-small", input=texts)
    assert [item.index for item in result.data] == list(range(len(texts)))
    assert result.usage.prompt_tokens == result.usage.total_tokens == sum(len(entry["tokens"]) for entry in TEXTS)
    for item, entry in zip(result.data, TEXTS):
        assert len(item.embedding) == len(entry["mean"]) == 576
        assert abs(sum(x * x for x in item.embedding) - 1) < 1e-4
        assert cosine(item.embedding, entry["mean"]) > 0.998, entry["text"][:30]
    # As floats, the same float32 numbers as the base64 the client decoded.
    floats = client.embeddings.create(model="m", input=texts[0], encoding_format="float")
    as_float32 = lambda vector: struct.pack(f"<{len(vector)}f", *vector)
    assert as_float32(floats.data[0].embedding) == as_float32(result.data[0].embedding)


def test_normalization_and_the_raw_vector(mean_server):
    entry = TEXTS[0]
    raw = embed(mean_server, input=entry["text"], embd_normalize=-1).json()["data"][0]["embedding"]
    difference = math.sqrt(sum((x - y) ** 2 for x, y in zip(raw, entry["mean"])))
    assert difference / math.sqrt(sum(y * y for y in entry["mean"])) < 0.05
    taxicab = embed(mean_server, input=entry["text"], embd_normalize=1).json()["data"][0]["embedding"]
    assert abs(sum(abs(x) for x in taxicab) - 1) < 1e-4
    int16 = embed(mean_server, input=entry["text"], embd_normalize=0).json()["data"][0]["embedding"]
    assert abs(max(abs(x) for x in int16) - 32760) < 0.1


def test_inputs_in_every_form_llama_server_reads(mean_server):
    """A text, its token ids, OpenAI's content parts and llama-server's prompt_string all give
    the one vector of the same tokens; several inputs give one each, in order."""
    entry = TEXTS[0]
    expected = embed(mean_server, input=entry["text"]).json()["data"][0]["embedding"]
    forms = [entry["tokens"], {"prompt_string": entry["text"]},
             {"content": [{"type": "text", "text": entry["text"][:10]}, {"type": "text", "text": entry["text"][10:]}]}]
    for form in forms:
        body = embed(mean_server, input=form).json()
        assert body["data"][0]["embedding"] == expected, form
    several = embed(mean_server, input=[entry["text"], TEXTS[1]["text"], entry["tokens"]]).json()["data"]
    assert len(several) == 3 and several[0]["embedding"] == several[2]["embedding"] == expected
    # llama-server's own route and its `content` field: its shape, one list of vectors each.
    native = embed(mean_server, "/embeddings", content=entry["text"]).json()
    assert native == [{"index": 0, "embedding": [expected]}]
    assert embed(mean_server, "/v1/embeddings", content=entry["text"]).json() == native


def test_bad_embedding_requests_name_the_field(mean_server):
    too_long = embed(mean_server, input="This is a test " * 600)
    body = error(too_long, 400)
    assert body["type"] == "exceed_context_size_error" and "too large" in body["message"] and body["n_ctx"] == 1024
    assert error(embed(mean_server, input=[]), 400)["param"] == "input"
    assert error(embed(mean_server, input=TEXTS[0]["text"], dimensions=256), 400)["param"] == "dimensions"
    assert embed(mean_server, input=TEXTS[0]["text"], dimensions=576).status_code == 200
    picture = {"content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
    assert "reads text only" in error(embed(mean_server, input=picture), 400)["message"]
    assert error(embed(mean_server, input={"content": [{"type": "unknown"}]}), 400)["param"] == "input.content[0].type"
    assert error(embed(mean_server, input="x", encoding_format="int8"), 400)["param"] == "encoding_format"
    assert error(embed(mean_server, input=[12, 999999]), 400)["param"] == "input[1]"
    assert error(embed(mean_server, input="x", pooling="max"), 400)["param"] == "pooling"


def test_pooling_as_configured_and_per_token_without_it(start_server):
    """--pooling last and cls pool as llama.cpp's; without --pooling this generative model pools
    nothing: /v1/embeddings says how to ask, and /embeddings gives each token's vector, not
    normalized, as llama-server does with pooling none."""
    entry = TEXTS[0]
    for pooling in ["last", "cls"]:
        server = start_server("--pooling", pooling)
        vector = embed(server, input=entry["text"]).json()["data"][0]["embedding"]
        assert cosine(vector, entry[pooling]) > 0.998, pooling
        server.stop()
    plain = start_server()
    refusal = error(embed(plain, input=entry["text"]), 400)
    assert "--pooling" in refusal["message"]
    rows = embed(plain, "/embeddings", input=entry["text"]).json()[0]["embedding"]
    assert len(rows) == len(entry["tokens"]) == len(entry["none"])
    for row, expected in zip(rows, entry["none"]):
        assert cosine(row, expected) > 0.998
        assert abs(sum(x * x for x in row) - 1) > 1e-3


def test_embeddings_beside_a_reply_leave_it_unchanged(mean_server):
    """Embeddings computed while a reply is decoded take turns with it on the kernel threads;
    the reply is the one it is alone (greedy)."""
    request = {"model": "m", "messages": [{"role": "user", "content": "Name three rivers."}], "max_tokens": 40, "temperature": 0}
    alone = post(mean_server, request).json()["choices"][0]["message"]["content"]
    done = threading.Event()
    vectors = []

    def keep_embedding():
        while not done.is_set():
            vectors.append(embed(mean_server, input=TEXTS[3]["text"]).json()["data"][0]["embedding"])

    worker = threading.Thread(target=keep_embedding)
    worker.start()
    try:
        beside = post(mean_server, request).json()["choices"][0]["message"]["content"]
    finally:
        done.set()
        worker.join()
    assert beside == alone
    assert vectors and all(vector == vectors[0] for vector in vectors)
    assert cosine(vectors[0], TEXTS[3]["mean"]) > 0.998
