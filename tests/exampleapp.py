"""A small support-bot application for the target tests: a Jinja prompt, a retrieval stub, a
post-processor and its own model client (urllib, pointed at the loopback LLM server by
`SUPPORTBOT_BASE_URL`). `write_app` puts it, with a suite that tests it, in a folder."""

from __future__ import annotations

import textwrap
from pathlib import Path

PROMPT = """\
You answer customers of {{ shop }}.
{% for doc in docs %}
[{{ loop.index }}] {{ doc }}
{% endfor %}
{% if tone == "formal" %}Be formal.{% else %}Be friendly.{% endif %}
Question: {{ question }}
"""

RETRIEVAL = '''
"""Retrieval stub: the policy paragraphs a question's words point to."""

POLICIES = {
    "refund": "Refund policy: refunds are paid within 14 days.",
    "shipping": "Shipping policy: parcels leave within 2 days.",
}


def retrieve(question: str) -> list[str]:
    return [text for word, text in POLICIES.items() if word in question.lower()]
'''

CLIENT = '''
"""The app's own model client: Chat Completions over urllib."""

import json
import os
import urllib.request


def chat(prompt: str) -> dict:
    base = os.environ["SUPPORTBOT_BASE_URL"].rstrip("/")
    body = {
        "model": os.environ.get("SUPPORTBOT_MODEL", "app-default-2026-01-01"),
        "messages": [{"role": "user", "content": prompt}],
    }
    request = urllib.request.Request(
        base + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": "Bearer x"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())
'''

APP = '''
"""The support bot: retrieve, render the Jinja prompt, ask the model, clean the answer."""

from pathlib import Path

import jinja2

from supportbot.client import chat
from supportbot.retrieval import retrieve

PROMPTS = Path(__file__).parent / "prompts"
_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(PROMPTS), undefined=jinja2.StrictUndefined)


def postprocess(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines)


def last_question(case: dict) -> str:
    for message in reversed(case.get("messages", [])):
        if message["role"] == "user":
            content = message["content"]
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content)
            return content
    return ""


def answer(case: dict) -> dict:
    vars = case["vars"]
    question = vars.get("question") or last_question(case)
    prompt = _ENV.get_template("answer.j2").render(
        shop="Acme", docs=retrieve(question), tone=vars.get("tone", ""),
        question=question + " MODE:echo",
    )
    reply = chat(prompt)
    usage = reply.get("usage", {})
    return {
        "text": postprocess(reply["choices"][0]["message"]["content"]),
        "model": reply.get("model", ""),
        "usage": {"input_tokens": usage.get("prompt_tokens"),
                  "output_tokens": usage.get("completion_tokens")},
    }
'''

CLI = '''
"""The bot as a command: the case as JSON on stdin, the answer as JSON on stdout."""

import json
import sys

from supportbot.app import answer

print(json.dumps(answer(json.load(sys.stdin))))
'''

SERVER = '''
"""The bot behind an HTTP endpoint: POST {"question": ...} answers {"data": {"reply": ...}}."""

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from supportbot.app import answer


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.headers.get("x-app-key") != "k-secret-123":
            self.send_response(401)
            self.end_headers()
            return
        result = answer({"vars": {"question": body["question"], "tone": body.get("tone", "")}})
        data = json.dumps({"data": {"reply": result["text"], "model": result["model"]}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve() -> ThreadingHTTPServer:
    return ThreadingHTTPServer(("127.0.0.1", 0), Handler)
'''

CASE = """\
id: refund-window
provenance: {{ticket: SUP-1, reported: 2026-03-01, note: customer asked about refunds}}
vars:
  question: {question}
  tone: formal
assert:
  - {{type: contains, value: "refunds are paid within 14 days"}}
  - {{type: contains, value: "Be formal."}}
"""

#: The target's settings besides its kind (the same for each kind).
SUITE_TARGET = """\
root: ../..
prompt_files: [supportbot/prompts/*.j2]
code: ["supportbot/**/*.py"]
model_env: SUPPORTBOT_MODEL
timeout_s: 20
env: {SUPPORTBOT_BASE_URL: "${LOOPBACK_BASE_URL}"}
"""

TARGETS = {
    "python": "python: supportbot.app:answer",
    "command": "command: [python, -m, supportbot.cli]",
}


def write_app(root: Path, target: str = "python", extra: str = "", question: str = "") -> Path:
    """The app under `root`, its suite under `root/cases/support`; returns the suite folder."""
    package = root / "supportbot"
    (package / "prompts").mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "prompts" / "answer.j2").write_text(PROMPT, encoding="utf-8")
    for name, text in {
        "retrieval": RETRIEVAL,
        "client": CLIENT,
        "app": APP,
        "cli": CLI,
        "server": SERVER,
    }.items():
        (package / f"{name}.py").write_text(text.lstrip(), encoding="utf-8")
    (root / "redline.toml").write_text("concurrency = 2\n[models]\n", encoding="utf-8")
    suite = root / "cases" / "support"
    suite.mkdir(parents=True, exist_ok=True)
    kind = TARGETS.get(target, target)
    (suite / "suite.yaml").write_text(
        "name: support\nsamples: 2\ntarget:\n"
        + textwrap.indent(kind, "  ")
        + "\n"
        + textwrap.indent(SUITE_TARGET, "  ")
        + extra,
        encoding="utf-8",
    )
    (suite / "refund-window.yaml").write_text(
        CASE.format(question=question or "How long does a refund take?"), encoding="utf-8"
    )
    return suite
