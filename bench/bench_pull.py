"""Benchmark: `redline pull` of N nights against a loopback GitHub API, beside a bare floor.

Each night is one artifact: a zip of a `redline export` of C cases × S samples. The
floor, measured in the same run on the same server, is a bare httpx client doing the
same HTTP (list the runs page by page, list each run's artifacts, download each zip
through the redirect) and only opening the zips. The pull does that plus parsing every
sample and importing each run in its own transaction. A second pull (nothing new) shows
what idempotence costs: listing only, no download.

    uv run python bench/bench_pull.py [--nights 30] [--cases 200] [--samples 5]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from github_server import LoopbackGitHub, zip_folder  # noqa: E402
from redline.ci.github import GitHubActions  # noqa: E402
from redline.ci.provider import RunQuery  # noqa: E402
from redline.ci.pull import pull  # noqa: E402
from redline.running.exchange import RESULTS_FILE, export_run  # noqa: E402
from redline.running.store import RunStore  # noqa: E402
from redline.vocabulary.verdicts import Verdict  # noqa: E402
from runfactory import CaseSpec, RunSpec, open_store, write_run  # noqa: E402

TOKEN = "ghs_bench"
REPO = "acme/shop"


def _nightly_zips(work: Path, nights: int, cases: int, samples: int) -> list[bytes]:
    verdicts = [Verdict.OK] * (samples - 1) + [Verdict.WRONG]
    spec = RunSpec("base00000000", [CaseSpec(f"c{i:04d}", verdicts) for i in range(cases)])
    with open_store(work) as store:
        write_run(store, spec)
        export_run(store, spec.run_id, work / "export")
    results = json.loads((work / "export" / RESULTS_FILE).read_text(encoding="utf-8"))
    zips = []
    for k in range(1, nights + 1):
        results["run"]["id"] = f"{0xB00000000000 + k:012x}"
        results["run"]["started_at"] = f"2026-01-01T03:{k % 60:02d}:00.000+00:00"
        (work / "export" / RESULTS_FILE).write_text(json.dumps(results), encoding="utf-8")
        zips.append(zip_folder(work / "export"))
    return zips


def _floor(github: LoopbackGitHub) -> float:
    """Wall seconds for the same HTTP with a bare client, zips opened but not parsed."""
    started = time.perf_counter()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(headers=headers) as client:
        client.get(f"{github.api_url}/repos/{REPO}").raise_for_status()
        url: str | None = f"{github.api_url}/repos/{REPO}/actions/workflows/{github.workflow}/runs"
        params: dict[str, str] | None = {"branch": "main", "status": "completed", "per_page": "100"}
        while url:
            page = client.get(url, params=params)
            params = None
            for run in page.json()["workflow_runs"]:
                listing = client.get(
                    f"{github.api_url}/repos/{REPO}/actions/runs/{run['id']}/artifacts"
                )
                for artifact in listing.json()["artifacts"]:
                    data = client.get(artifact["archive_download_url"], follow_redirects=True)
                    with zipfile.ZipFile(io.BytesIO(data.content)) as archive:
                        archive.read(RESULTS_FILE)
            url = page.links.get("next", {}).get("url")
    return time.perf_counter() - started


def _pull(github: LoopbackGitHub, store: RunStore, nights: int) -> tuple[float, int]:
    started = time.perf_counter()
    with GitHubActions(REPO, TOKEN, github.api_url) as provider:
        summary = pull(store, provider, RunQuery("prompt-evals.yml", last=nights))
    assert summary.complete, summary
    return time.perf_counter() - started, len(summary.imported)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=30)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="redline-bench-pull-") as tmp,
        LoopbackGitHub(REPO, TOKEN) as github,
    ):
        work = Path(tmp)
        zips = _nightly_zips(work, args.nights, args.cases, args.samples)
        for k, data in enumerate(zips, start=1):
            github.add_run(k, f"2026-01-{1 + k // 24:02d}T{k % 24:02d}:17:00Z", {"q": data})
        samples = args.nights * args.cases * args.samples
        size_mb = sum(len(z) for z in zips) / 1e6
        print(
            f"{args.nights} nights × {args.cases} cases × {args.samples} samples = {samples:,} "
            f"samples in {size_mb:.1f} MB of zips"
        )
        floor = min(_floor(github) for _ in range(3))
        with RunStore.open(work / "pulled.db") as store:
            first, imported = _pull(github, store, args.nights)
            again, imported_again = _pull(github, store, args.nights)
        print(f"bare httpx floor (list + download + open zips, best of 3)  {floor:8.2f} s")
        print(
            f"redline pull, empty store ({imported} runs imported)          {first:8.2f} s"
            f"  = {first / floor:.1f}× the floor, {samples / first:,.0f} samples/s"
        )
        print(
            f"redline pull again ({imported_again} imported, nothing downloaded)      "
            f"{again:8.2f} s  = {again / floor:.2f}× the floor"
        )


if __name__ == "__main__":
    main()
