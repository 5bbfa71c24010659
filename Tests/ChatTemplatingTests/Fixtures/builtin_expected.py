#!/usr/bin/env python3
"""Writes builtin_templates.json: what llama-server writes for each of llama.cpp's built-in chat
formats (`--no-jinja --chat-template NAME`, its C++ `llm_chat_apply_template`) from a few
conversations, read back through its `POST /apply-template`. The Swift tests
(BuiltInTemplateTests) render Typeset's Jinja rendition of each format with the same
conversations and compare.

    python3 builtin_expected.py LLAMA_SERVER MODEL.gguf

Any GGUF model will do (the formats do not read it). Run again when llama.cpp's formats or the
list of names Typeset renders change."""
import json, os, subprocess, sys, time, urllib.request

NAMES = [
    "chatml", "llama2", "llama2-sys", "llama2-sys-bos", "llama2-sys-strip", "mistral-v1", "mistral-v3",
    "mistral-v3-tekken", "mistral-v7", "mistral-v7-tekken", "phi3", "phi4", "falcon3", "zephyr", "monarch", "gemma",
    "orion", "openchat", "vicuna", "vicuna-orca", "deepseek", "deepseek2", "deepseek3", "deepseek-ocr", "command-r",
    "llama3", "chatglm3", "chatglm4", "glmedge", "minicpm", "exaone3", "exaone4", "exaone-moe", "granite",
    "granite-4.0", "granite-4.1", "megrez", "llama4", "smolvlm", "gpt-oss", "kimi-k2", "seed_oss", "grok-2",
    "solar-open",
]

CONVERSATIONS = {
    # llama.cpp's own (tests/test-chat-template.cpp): a system prompt, turns, a reply with spaces.
    "llama.cpp": [
        {"role": "system", "content": "You are a helpful assistant"},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there"},
        {"role": "user", "content": "Who are you"},
        {"role": "assistant", "content": "   I am an assistant   "},
        {"role": "user", "content": "Another question"},
    ],
    "one user turn": [{"role": "user", "content": "What is 2 + 2?"}],
    "no system, whitespace and Unicode": [
        {"role": "user", "content": "  Grüße, café — «quoted» {{ not jinja }}\n"},
        {"role": "assistant", "content": "\nDanke!\n"},
        {"role": "user", "content": "Two\n\nparagraphs."},
    ],
    # llama.cpp trims ASCII whitespace only: a no-break space and an ideographic space stay.
    "Unicode spaces at the edges": [
        {"role": "system", "content": "\u3000Be brief.\u00a0"},
        {"role": "user", "content": "\u00a0¿Qué hora es?\u3000\n"},
    ],
    "two system messages": [
        {"role": "system", "content": "First rule."},
        {"role": "system", "content": " Second rule. "},
        {"role": "user", "content": "Go"},
    ],
}


def post(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def main():
    server, model = sys.argv[1], sys.argv[2]
    port = 8123
    results = {}
    for name in NAMES:
        process = subprocess.Popen([server, "-m", model, "--port", str(port), "--no-jinja", "--chat-template", name, "-c", "512"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(120):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                    break
                except Exception:
                    time.sleep(0.25)
            results[name] = [{"conversation": label, "messages": messages,
                              "prompt": post(port, "/apply-template", {"messages": messages})["prompt"]}
                             for label, messages in CONVERSATIONS.items()]
        finally:
            process.terminate()
            process.wait()
    target = os.path.join(os.path.dirname(os.path.abspath(__file__)), "builtin_templates.json")
    with open(target, "w") as file:
        json.dump(results, file, ensure_ascii=False, indent=1)
        file.write("\n")
    print(f"{len(results)} formats × {len(CONVERSATIONS)} conversations → {target}")


main()
