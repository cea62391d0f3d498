"""Hostile servers, dead endpoints, full disks: every one bounded, said clearly, nothing lost,
no secret shown. Each server is real (loopback sockets), each store a real SQLite file."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from redline.cli import main
from redline.config import parse_config
from redline.errors import ConfigError, StoreCorrupt
from redline.httpio import AnswerTooLarge, BrokenAnswer, HttpClient, HttpPolicy
from redline.providers.factory import make_provider
from redline.running.options import RunOptions
from redline.running.runner import run_suites
from redline.running.store import SEARCH_PREFIX_CHARS, RunStore
from redline.suite.cases import load_suites
from redline.vocabulary.completion import ChatRequest, Completion, FinishReason
from redline.vocabulary.records import RunStatus
from redline.vocabulary.verdicts import Verdict
from servers import LoopbackLLMServer
from test_runner import KEY_ENV, SECRET, write_config, write_suite
from test_transport import ServerFactory, ok, post, raw_server, read_request

__all__ = ["raw_server"]  # the fixture, used by name

SRC = Path(__file__).resolve().parents[1] / "src"
ANSWER = b'{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}'


def hostile_config(root: Path, base_url: str, *, limit: int = 1024 * 1024, extra: str = "") -> Path:
    (root / "redline.toml").write_text(
        f'concurrency = 4\n[models]\nfake = "hostile:model-2025-01-01"\n'
        f'[providers.hostile]\ntype = "openai"\nbase_url = "{base_url}"\n'
        f'api_key_env = "{KEY_ENV}"\ntimeout_s = 2.0\nmax_retries = 0\n'
        f"max_response_bytes = {limit}\n{extra}",
        encoding="utf-8",
    )
    return root / "redline.toml"


def complete(path: Path, key: str = SECRET) -> tuple[str | None, float]:
    config = parse_config(path)
    provider = make_provider(config.model("fake"), config, {KEY_ENV: key})
    started = time.monotonic()

    async def go() -> str | None:
        try:
            return (await provider.complete(ChatRequest(model="m", system="", user="u"))).error
        finally:
            await provider.aclose()

    return asyncio.run(go()), time.monotonic() - started


# --- answers too large, endless, compressed, with huge headers ------------------------------


def test_a_body_larger_than_max_response_bytes_is_refused_before_it_is_read(
    raw_server: ServerFactory, tmp_path: Path
) -> None:
    def serve(connection: socket.socket, _: int) -> None:
        read_request(connection)
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n" + b"x" * 65536)

    error, took = complete(hostile_config(tmp_path, raw_server(serve).url))
    assert error is not None and "answer larger than 1 MB" in error
    assert took < 2.0


def test_an_endless_chunked_body_stops_at_the_limit(
    raw_server: ServerFactory, tmp_path: Path
) -> None:
    def serve(connection: socket.socket, _: int) -> None:
        read_request(connection)
        connection.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (65536, b"y" * 65536)
        try:
            while True:
                connection.sendall(chunk)
        except OSError:
            return

    error, took = complete(hostile_config(tmp_path, raw_server(serve).url))
    assert error is not None and "answer larger than 1 MB" in error
    assert took < 2.0  # bounded by the limit, long before the timeout


def test_a_gzip_bomb_is_never_inflated_unasked_and_bounded_when_asked(
    raw_server: ServerFactory,
) -> None:
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)

    def serve(connection: socket.socket, _: int) -> None:
        while read_request(connection):
            connection.sendall(ok(bomb, "Content-Encoding: gzip"))

    server = raw_server(serve)
    with pytest.raises(BrokenAnswer, match="did not ask for"):
        post(server.url)
    client = HttpClient(HttpPolicy(timeout_s=5, max_response_bytes=1024 * 1024))
    started = time.monotonic()
    with pytest.raises(AnswerTooLarge, match="answer larger than 1 MB"):
        post(server.url, client, decompress=True)
    assert time.monotonic() - started < 2.0


def test_huge_headers_are_refused_quickly(raw_server: ServerFactory, tmp_path: Path) -> None:
    def serve(connection: socket.socket, _: int) -> None:
        read_request(connection)
        try:
            connection.sendall(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (4 * 1024 * 1024))
        except OSError:
            return

    error, took = complete(hostile_config(tmp_path, raw_server(serve).url))
    assert error is not None and "malformed answer" in error
    assert took < 2.0


def test_an_answer_pipelined_after_the_real_one_is_never_read_as_the_next(
    raw_server: ServerFactory,
) -> None:
    def serve(connection: socket.socket, _: int) -> None:
        n = 0
        while read_request(connection):
            n += 1
            extra = b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nstale" if n == 1 else b""
            connection.sendall(ok(b"answer %d" % n) + extra)

    answers = post(raw_server(serve).url, count=2)
    assert answers[0].status == 200
    assert answers[0].body == b"answer 1"
    assert not (answers[1].status == 404 and answers[1].body == b"stale")


# --- line breaks in header values: refused before any request --------------------------------


def test_a_line_break_in_a_toml_header_setting_is_refused_with_its_line(tmp_path: Path) -> None:
    path = hostile_config(
        tmp_path,
        "http://127.0.0.1:9",
        extra='anthropic_version = "2023-06-01\\r\\nX-Injected: yes"\n',
    )
    with pytest.raises(ConfigError, match=r"redline\.toml:11:\d+: .*line break") as raised:
        parse_config(path)
    assert "X-Injected" not in str(raised.value)


def test_a_line_break_in_a_key_is_refused_naming_the_variable(
    llm_server: LoopbackLLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(tmp_path, llm_server)
    write_suite(tmp_path, "s", {"a": "MODE:json"})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, "sk-good\r\nGET /smuggled HTTP/1.1")
    assert main(["validate", "s"]) == 2
    err = capsys.readouterr().err
    assert KEY_ENV in err and "line break" in err and "smuggled" not in err
    assert main(["run", "s", "--quiet"]) == 2
    assert KEY_ENV in capsys.readouterr().err
    assert llm_server.count() == 0


# --- dead endpoints and a provider dying mid-run ---------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("where", "cause"),
    [("127.0.0.1:{port}", "cannot connect"), ("nothing.invalid:8080", "cannot resolve the host")],
    ids=["closed port", "unknown host"],
)
def test_a_dead_endpoint_stops_the_run_at_once_naming_provider_and_base_url(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
    cause: str,
) -> None:
    base_url = f"http://{where.format(port=_closed_port())}/v1"
    hostile_config(tmp_path, base_url)
    write_suite(tmp_path, "s", {f"c{i}": "MODE:json" for i in range(50)}, samples=5)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, SECRET)
    started = time.monotonic()
    assert main(["run", "s", "--quiet"]) == 2
    assert time.monotonic() - started < 10
    err = capsys.readouterr().err
    assert "provider 'hostile'" in err and base_url in err and "base_url" in err and cause in err
    assert "--resume" in err and "0 finished sample(s) are kept" in err


def test_404_on_every_request_stops_the_run_at_its_first_requests(
    raw_server: ServerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    answer = b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"
    code, err, _, seen = run_answered(raw_server, tmp_path, monkeypatch, capsys, answer)
    assert code == 2
    assert "HTTP 404" in err and "provider 'hostile'" in err and "redline run --resume" in err
    assert "/chat/completions: not found" in err  # the server's words
    assert seen <= 4  # the requests already in flight, not 250 samples' worth


def run_answered(
    raw_server: ServerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    answer: bytes,
    *,
    kind: str = "openai",
    retries: int = 0,
) -> tuple[int, str, str, int]:
    """`redline run` of 50 cases x 5 against a server that gives `answer` to every request,
    through a provider of type `kind` retrying `retries` times: its exit code, what it
    wrote on stderr, the base_url, and the requests the server saw."""
    seen: list[bytes] = []

    def serve(connection: socket.socket, _: int) -> None:
        while request := read_request(connection):
            seen.append(request)
            connection.sendall(answer)

    server = raw_server(serve)
    base_url = server.url.removesuffix("/x")
    config = hostile_config(tmp_path, base_url)
    settings = config.read_text("utf-8").replace("max_retries = 0", f"max_retries = {retries}")
    config.write_text(settings.replace('type = "openai"', f'type = "{kind}"'), "utf-8")
    write_suite(tmp_path, "s", {f"c{i}": "MODE:json" for i in range(50)}, samples=5)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, SECRET)
    code = main(["run", "s", "--quiet"])
    return code, capsys.readouterr().err, base_url, len(seen)


PAGE = b"<html><body><h1>Welcome to nginx!</h1></body></html>"


@pytest.mark.parametrize("kind", ["text/html; charset=utf-8", "text/plain"])
def test_a_base_url_that_answers_a_web_page_stops_the_run_at_its_first_requests(
    raw_server: ServerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    """A base_url pointing at a web server (200 and a page on every path) is no model: the
    run stops as it does on a 404, instead of retrying every sample into the breaker."""
    answer = ok(PAGE, f"Content-Type: {kind}")
    code, err, base_url, seen = run_answered(raw_server, tmp_path, monkeypatch, capsys, answer)
    assert code == 2
    assert "provider 'hostile'" in err and base_url in err
    assert f"not JSON ({kind})" in err and "Welcome to nginx!" in err
    assert "0 finished sample(s) are kept" in err and "redline run --resume" in err
    assert seen <= 4


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_base_url_that_redirects_stops_the_run_saying_where_it_points(
    raw_server: ServerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    status: int,
) -> None:
    """`http://` where the API moved to `https://`: the redirect is not followed (the key
    would go with it), and the run stops at once, naming where it points and the base_url
    that reaches it."""
    answer = (
        f"HTTP/1.1 {status} Moved\r\nLocation: https://api.example.test/v1/chat/completions"
        "\r\nContent-Length: 0\r\n\r\n"
    ).encode()
    code, err, base_url, seen = run_answered(raw_server, tmp_path, monkeypatch, capsys, answer)
    assert code == 2 and seen <= 4
    assert f"HTTP {status}: {base_url}/chat/completions redirects to https://api.example" in err
    assert "set base_url to https://api.example.test/v1 " in err
    assert "redline run --resume" in err


QUOTA = (
    b'{"error": {"message": "You exceeded your current quota, please check your plan and '
    b'billing details.", "type": "insufficient_quota", "param": null, '
    b'"code": "insufficient_quota"}}'
)
CREDIT = (
    b'{"type": "error", "error": {"type": "invalid_request_error", "message": "Your credit '
    b"balance is too low to access the Anthropic API. Please go to Plans & Billing to "
    b'upgrade or purchase credits."}}'
)
NO_MODEL = (
    b'{"error": {"message": "The model `model-2025-01-01` does not exist or you do not have '
    b'access to it.", "type": "invalid_request_error", "param": null, "code": "model_not_found"}}'
)
NO_MODEL_ANTHROPIC = (
    b'{"type": "error", "error": {"type": "not_found_error", "message": "model: model-2025-01-01"}}'
)
ACCOUNT_FIX = "Add credit or raise the account's limits"
MODEL_FIX = "Check the model's id in the configuration's [models] table"


@pytest.mark.parametrize(
    ("kind", "status", "body", "words", "fix"),
    [
        (
            "openai",
            "429 Too Many Requests",
            QUOTA,
            "refuses the account: You exceeded your current quota",
            ACCOUNT_FIX,
        ),
        (
            "anthropic",
            "400 Bad Request",
            CREDIT,
            "refuses the account: Your credit balance is too low",
            ACCOUNT_FIX,
        ),
        (
            "openai",
            "404 Not Found",
            NO_MODEL,
            "serves no model 'model-2025-01-01': The model `model-2025-01-01` does not exist",
            MODEL_FIX,
        ),
        (
            "anthropic",
            "404 Not Found",
            NO_MODEL_ANTHROPIC,
            "serves no model 'model-2025-01-01': model: model-2025-01-01",
            MODEL_FIX,
        ),
    ],
    ids=["openai quota", "anthropic credit", "openai model", "anthropic model"],
)
def test_an_account_or_a_model_the_provider_refuses_stops_the_run_at_once(
    raw_server: ServerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    status: str,
    body: bytes,
    words: str,
    fix: str,
) -> None:
    """OpenAI's `insufficient_quota` is a 429 that waiting never cures, and Anthropic's
    spent credit a 400 every request gets: neither is retried, and the run stops at its
    first requests with the provider's words and what to do (it took 70 s of retries and
    backoff into the breaker on 300 samples, and said only "HTTP 429"). A model id the
    provider does not serve says so, not "check the base_url" as a 404 did."""
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
    answer = f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body
    code, err, _, seen = run_answered(
        raw_server, tmp_path, monkeypatch, capsys, answer, kind=kind, retries=3
    )
    assert code == 2
    assert f"provider 'hostile' {words}" in err and "(1 attempt)" in err
    assert fix in err and "redline run --resume" in err and "base_url" not in err
    assert seen <= 4  # the first requests, none retried


def test_a_rate_limit_keeps_the_servers_words(raw_server: ServerFactory, tmp_path: Path) -> None:
    """An ordinary 429 is retried as before, and the sample's error keeps why the server
    throttled (which limit, of what)."""
    said = b'{"error": {"message": "Rate limit reached for requests per min", "code": null}}'
    url = answering(raw_server, "429 Too Many Requests", said)
    error, _ = complete(hostile_config(tmp_path, url))
    assert error is not None
    assert "HTTP 429 Too Many Requests: " in error and "Rate limit reached for requests" in error
    assert "refuses the account" not in error


def test_a_proxy_that_refuses_its_credentials_stops_the_run_at_once(
    raw_server: ServerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """HTTP 407 from the proxy of a plain-http base_url (the proxy answers in the model's
    place): every request would get it, so the run stops, without the proxy's password."""
    seen: list[bytes] = []

    def serve(connection: socket.socket, _: int) -> None:
        while request := read_request(connection):
            seen.append(request)
            connection.sendall(
                b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                b'Proxy-Authenticate: Basic realm="corp"\r\nContent-Length: 0\r\n\r\n'
            )

    proxy = raw_server(serve).url.removesuffix("/x")
    monkeypatch.setenv("HTTP_PROXY", proxy.replace("http://", "http://puser:pr0xy-S3CRET@"))
    for name in ("NO_PROXY", "no_proxy", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    hostile_config(tmp_path, "http://api.example.test/v1")
    write_suite(tmp_path, "s", {f"c{i}": "MODE:json" for i in range(50)}, samples=5)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, SECRET)
    assert main(["run", "s", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "HTTP 407" in err and "check the user and password in the proxy variable" in err
    assert "pr0xy-S3CRET" not in err and "redline run --resume" in err
    assert seen and all(b"api.example.test" in request for request in seen) and len(seen) <= 4


@pytest.mark.parametrize(
    ("broken", "first", "said"),
    [
        (ok(PAGE, "Content-Type: text/html"), False, "not JSON"),  # a proxy's page, mid-run
        (ok(b'{"choices": [{"mess', "Content-Type: application/json"), True, "not JSON"),
        (ok(b"oops"), True, "not JSON"),  # no content type: the doubt
        (
            b"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n",
            False,
            "redirects to",
        ),
    ],
    ids=["page after answers", "json cut short first", "no content type first", "redirect"],
)
def test_a_broken_answer_the_endpoint_may_send_is_a_failed_sample_not_a_stop(
    raw_server: ServerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    broken: bytes,
    first: bool,
    said: str,
) -> None:
    """A body that is not JSON stops the run only when nothing has answered as the API and
    its content type says it is something else: once the endpoint has answered, or when the
    body claims JSON or says nothing, it is a malformed answer like any other: that sample
    fails, the run goes on."""
    numbers = itertools.count(1)  # each request's number, taken atomically

    def serve(connection: socket.socket, _: int) -> None:
        while read_request(connection):
            bad = next(numbers) in ((1, 2) if first else (5, 6))
            connection.sendall(broken if bad else ok(ANSWER, "Content-Type: application/json"))

    server = raw_server(serve)
    hostile_config(tmp_path, server.url.removesuffix("/x"))
    write_suite(tmp_path, "s", {f"c{i}": "MODE:json" for i in range(4)}, samples=5)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, SECRET)
    # Red ("hi" is not the JSON the cases ask for), not stopped as a wrong endpoint (2).
    assert main(["run", "s", "--quiet", "--out", "out"]) == 1
    assert "stopped at its first request" not in capsys.readouterr().err
    lines = (tmp_path / "out" / "samples.jsonl").read_text("utf-8").splitlines()
    assert len(lines) == 20  # every sample drawn
    failed = [line for line in lines if '"verdict": "transport"' in line]
    assert len(failed) == 2 and all(said in line for line in failed)


def test_a_server_dying_mid_run_trips_the_circuit_breaker(
    raw_server: ServerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    answered: list[int] = []

    def serve(connection: socket.socket, _: int) -> None:
        while read_request(connection):
            if len(answered) >= 6:
                return  # dead: every connection closed without an answer
            answered.append(1)
            connection.sendall(ok(ANSWER, "Content-Type: application/json"))

    server = raw_server(serve)
    hostile_config(tmp_path, server.url.removesuffix("/x"))
    write_suite(tmp_path, "s", {f"c{i}": "MODE:json" for i in range(40)}, samples=5)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, SECRET)
    assert main(["run", "s"]) == 3
    out = capsys.readouterr().out
    assert "stopped early: the provider stopped answering" in out
    assert "redline run --resume" in out
    with RunStore.open(tmp_path / ".redline" / "redline.db") as store:
        [record] = store.runs()
        stored = len(store.sample_keys(record.id))
    assert 6 <= stored < 40  # not 200 samples drained through retries


# --- no secret in any message: proxies with credentials --------------------------------------


def test_a_proxy_password_is_never_shown_nor_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile_config(tmp_path, "http://example.invalid/v1")
    write_suite(tmp_path, "s", {"a": "MODE:json"})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.setenv("HTTP_PROXY", "ftp://puser:pr0xy-S3CRET@127.0.0.1:18888")
    assert main(["validate", "s"]) == 2
    err = capsys.readouterr().err
    assert "HTTP_PROXY" in err and "pr0xy-S3CRET" not in err and "***@" in err
    monkeypatch.setenv("HTTP_PROXY", f"http://puser:pr0xy-S3CRET@127.0.0.1:{_closed_port()}")
    assert main(["run", "s", "--quiet"]) == 2
    captured = capsys.readouterr()
    assert "proxy" in captured.err and "pr0xy-S3CRET" not in captured.err + captured.out
    db = tmp_path / ".redline" / "redline.db"
    assert b"pr0xy-S3CRET" not in db.read_bytes()


# --- stores that fail well -------------------------------------------------------------------


def _tmpfs(path: Path) -> bool:
    path.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(path)], capture_output=True
    )
    return done.returncode == 0


def test_a_full_disk_keeps_what_was_stored_and_says_how_to_go_on(
    llm_server: LoopbackLLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    disk = tmp_path / "disk"
    mounted = _tmpfs(disk)
    try:
        store = "disk/redline.db"
        write_config(tmp_path, llm_server, concurrency=2)
        toml = tmp_path / "redline.toml"
        toml.write_text(f'store = "{store}"\n' + toml.read_text(), encoding="utf-8")
        words = "MODE:echo " + "many words of output " * 200
        write_suite(tmp_path, "s", {f"c{i}": words for i in range(200)}, samples=5)
        if not mounted:
            pytest.skip("a tmpfs cannot be mounted here (needs root)")
        done = subprocess.run(
            [sys.executable, "-m", "redline", "run", "s", "--quiet"],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(SRC), KEY_ENV: SECRET},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2, done.stderr
        err = " ".join(done.stderr.split())  # the message as one line, however it wrapped
        assert f"the disk holding {tmp_path / store} is full" in err
        assert "redline run --resume" in err and "free space" in err.lower()
        with RunStore.open(tmp_path / store) as opened:
            [record] = opened.runs()
            assert record.status is RunStatus.INTERRUPTED
            assert f"{len(opened.sample_keys(record.id))} sample(s) are kept" in err
    finally:
        if mounted:
            subprocess.run(["umount", str(disk)], check=False)


def test_a_corrupt_or_foreign_store_names_the_file_and_the_way_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "redline.db"
    path.write_bytes(b"this is a spreadsheet, not a database" * 100)
    with pytest.raises(StoreCorrupt, match=r"redline import") as raised:
        RunStore.open(path)
    assert str(path) in str(raised.value)


def test_a_killed_run_shows_interrupted_and_a_second_resume_is_refused(
    llm_server: LoopbackLLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(tmp_path, llm_server, concurrency=2, timeout_s=60.0)
    write_suite(tmp_path, "s", {f"c{i}": f"MODE:json n{i}" for i in range(4)}, samples=5)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, SECRET)
    llm_server.hold_after(3)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "redline", "run", "s", "--quiet"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    db = tmp_path / ".redline" / "redline.db"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            time.sleep(0.05)
            try:
                with sqlite3.connect(db) as raw:
                    if raw.execute("SELECT COUNT(*) FROM samples").fetchone()[0] >= 3:
                        break
            except sqlite3.OperationalError:
                continue
        with RunStore.open(db) as store:
            [record] = store.runs()
            assert record.status is RunStatus.RUNNING  # its process is alive
        # Another process holds the run: a resume is refused before any request.
        before = llm_server.count()
        assert main(["run", "--resume", record.id, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert f"process {proc.pid}" in err and socket.gethostname() in err
        assert llm_server.count() == before
        proc.kill()
        proc.wait(timeout=10)
    finally:
        llm_server.release()
        if proc.poll() is None:
            proc.kill()
    with RunStore.open(db) as store:
        assert store.runs()[0].status is RunStatus.INTERRUPTED  # its process is gone
    llm_server.reset()
    assert main(["run", "--resume", record.id, "--quiet"]) == 0
    with RunStore.open(db) as store:
        assert len(store.samples(record.id)) == 20
    assert llm_server.count() == 17  # no request sent twice


def test_an_output_too_large_for_the_store_never_stops_the_run(
    llm_server: LoopbackLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(tmp_path, llm_server)
    write_suite(
        tmp_path, "s", {"big": "MODE:echo " + "z" * 1_200_000, "small": "MODE:json"}, samples=2
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, SECRET)
    store = RunStore.open(tmp_path / ".redline" / "redline.db")
    store._db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1_100_000)  # SQLite's limit, made small
    config = parse_config(tmp_path / "redline.toml")
    record = run_suites(load_suites([tmp_path / "s"], config), config, store, RunOptions())
    assert record.status is RunStatus.FINISHED
    samples = {(s.case_id, s.index): s for s in store.samples(record.id)}
    assert len(samples) == 4
    big = samples[("big", 0)]
    assert big.verdict is Verdict.TRANSPORT and "too large for the store" in (big.error or "")
    assert samples[("small", 0)].verdict is Verdict.OK
    store.close()


def test_the_search_index_keeps_a_bounded_prefix_of_each_output(
    llm_server: LoopbackLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from redline.running.search import search_run

    write_config(tmp_path, llm_server)
    text = "opening-words " + "w " * SEARCH_PREFIX_CHARS + "closing-words"
    write_suite(tmp_path, "s", {"big": "MODE:echo " + text}, samples=1)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, SECRET)
    assert main(["run", "s", "--quiet"]) in (0, 1)
    with RunStore.open(tmp_path / ".redline" / "redline.db") as store:
        [record] = store.runs()
        assert "closing-words" in store.samples(record.id)[0].output  # stored whole
        assert len(search_run(store, record.id, "opening-words")) == 1
        assert search_run(store, record.id, "closing-words") == []  # beyond the indexed prefix


def test_zlib_is_what_decodes(raw_server: ServerFactory) -> None:
    """A deflate answer asked for is decoded like a gzip one."""
    body = zlib.compress(b'{"ok": 1}')

    def serve(connection: socket.socket, _: int) -> None:
        read_request(connection)
        connection.sendall(ok(body, "Content-Encoding: deflate"))

    assert post(raw_server(serve).url, decompress=True)[0].json() == {"ok": 1}


class _AnswersThenCrashes:
    """A provider answering `answers` requests, then failing the run (a crash mid-run)."""

    max_parallel = 1

    def __init__(self, answers: int) -> None:
        self.left = answers

    async def complete(self, request: ChatRequest) -> Completion:
        if self.left <= 0:
            raise _Crash
        self.left -= 1
        return Completion(text='{"ok": true}', finish_reason=FinishReason.STOP)

    async def aclose(self) -> None:
        pass

    def identity(self) -> str:
        return "hostile:model-2025-01-01"


class _Crash(Exception):
    pass


def test_a_key_refused_on_resume_counts_the_samples_kept_before(
    raw_server: ServerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def serve(connection: socket.socket, _: int) -> None:
        while read_request(connection):
            connection.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\nno")

    path = hostile_config(tmp_path, raw_server(serve).url.removesuffix("/x"))
    write_suite(tmp_path, "s", {f"c{i}": "MODE:json" for i in range(4)}, samples=5)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, SECRET)
    config = parse_config(path)
    store = RunStore.open(config.store_path)
    with pytest.raises(_Crash):
        run_suites(
            load_suites([tmp_path / "s"], config),
            config,
            store,
            RunOptions(suites=("s",)),
            provider=_AnswersThenCrashes(3),
        )
    [record] = store.runs()
    store.close()
    assert main(["run", "--resume", record.id, "--quiet"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "HTTP 401" in err and f"3 finished sample(s) are kept in run {record.id}" in err


def test_credentials_in_a_base_url_are_sent_once_and_never_shown(
    raw_server: ServerFactory, tmp_path: Path
) -> None:
    seen: list[bytes] = []

    def serve(connection: socket.socket, _: int) -> None:
        while request := read_request(connection):
            seen.append(request)
            connection.sendall(b"HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\noops")

    url = raw_server(serve).url.replace("http://", "http://buser:b4se-S3CRET@")
    error, _ = complete(hostile_config(tmp_path, url.removesuffix("/x")))
    assert error is not None and "b4se-S3CRET" not in error and "HTTP 500" in error
    assert b"b4se-S3CRET" not in seen[0]  # the API key authenticates; the URL's pair is dropped
    assert f"Bearer {SECRET}".encode() in seen[0]


def answering(raw_server: ServerFactory, status: str, body: bytes) -> str:
    """The base_url of a server that answers every request with `status` and `body`."""
    head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n\r\n".encode()

    def serve(connection: socket.socket, _: int) -> None:
        while read_request(connection):
            connection.sendall(head + body)

    return raw_server(serve).url.removesuffix("/x")


def test_a_key_too_short_to_be_a_secret_leaves_error_text_whole(
    raw_server: ServerFactory, tmp_path: Path
) -> None:
    """A local server's placeholder key ("x", "EMPTY") is no secret: hiding every "x" of an
    error would garble it (the rule the stored samples follow too)."""
    body = b'{"error": "max_tokens exceeds the context"}'
    url = answering(raw_server, "400 Bad Request", body)
    error, _ = complete(hostile_config(tmp_path, url), key="x")
    assert error is not None and "max_tokens exceeds the context" in error


def test_userinfo_at_the_cut_of_an_error_body_is_still_hidden(
    raw_server: ServerFactory, tmp_path: Path
) -> None:
    """An error body quoting a proxy URL with its password where the quoted part ends: the
    password is hidden before the cut, so no first half of it shows."""
    body = b"A" * 280 + b" via http://puser:pr0xy-S3CRET@proxy.internal:3128/"  # cut at "pr"
    url = answering(raw_server, "500 Oops", body)
    error, _ = complete(hostile_config(tmp_path, url))
    assert error is not None and "HTTP 500" in error and "AAAA" in error
    assert "pr0xy" not in error and "puser" not in error


def test_a_store_damaged_inside_names_the_file_and_the_way_back(
    llm_server: LoopbackLLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(tmp_path, llm_server)
    write_suite(tmp_path, "s", {f"c{i}": "MODE:json" for i in range(20)}, samples=5)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, SECRET)
    assert main(["run", "s", "--quiet"]) == 0
    db = tmp_path / ".redline" / "redline.db"
    data = bytearray(db.read_bytes())
    page = 4096
    for start in range(page, len(data), page):  # every page but the schema's
        data[start + 8 : start + page] = b"\xa5" * (page - 8)
    db.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["runs"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert str(db) in err and "redline import" in err and "backup" in err


def test_a_ca_bundle_that_is_not_there_is_refused_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = hostile_config(tmp_path, "https://127.0.0.1:9/v1", extra='ca_bundle = "nope.pem"\n')
    config = parse_config(path)
    with pytest.raises(
        ConfigError,
        match=r"redline\.toml:11:\d+: \[providers\.hostile\] ca_bundle: no file 'nope.pem'",
    ):
        make_provider(config.model("fake"), config, {KEY_ENV: SECRET})
    write_suite(tmp_path, "s", {"a": "MODE:json"})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, SECRET)
    assert main(["validate", "s"]) == 2
    assert "ca_bundle: no file 'nope.pem'" in capsys.readouterr().err
    (tmp_path / "ca.pem").write_text("", encoding="utf-8")
    hostile_config(tmp_path, "https://127.0.0.1:9/v1", extra='ca_bundle = "ca.pem"\n')
    config = parse_config(path)
    assert make_provider(config.model("fake"), config, {KEY_ENV: SECRET}) is not None
