"""Shard selection (`--shard K/N`) and merging shard exports back into one run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from redline.ci.shard import merge_exports, write_merged
from redline.cli import main
from redline.deciding.baseline import is_partial_run
from redline.errors import ProblemsError, UsageError
from redline.running.exchange import export_run, import_run
from redline.running.store import RunStore
from redline.suite.shards import parse_shard, select, shard_of
from redline.vocabulary.records import RunResult
from runfactory import OK, TRANSPORT, WRONG, CaseSpec, RunSpec, open_store, write_config, write_run


@dataclass(frozen=True)
class _Case:
    suite: str
    id: str

    @property
    def path(self) -> Path:
        """Its case file, named after its id (the convention)."""
        return Path(self.suite, f"{self.id}.yaml")


def _cases(n: int, suite: str = "invoice-extract") -> list[_Case]:
    return [_Case(suite, f"{i:04d}-case") for i in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_shards_cover_every_case_exactly_once(n: int) -> None:
    cases = _cases(200) + _cases(50, "support-reply")
    picked = [c for k in range(1, n + 1) for c in select(cases, k, n)]
    assert sorted(picked, key=lambda c: (c.suite, c.id)) == sorted(
        cases, key=lambda c: (c.suite, c.id)
    )
    assert len(picked) == len(set(picked))


def test_adding_a_case_moves_no_other_case() -> None:
    before = _cases(100)
    after = [*before[:40], _Case("invoice-extract", "0040-new-incident"), *before[40:]]
    for k in (1, 2, 3, 4):
        old = set(select(before, k, 4))
        new = set(select(after, k, 4))
        assert new - old <= {_Case("invoice-extract", "0040-new-incident")}
        assert old <= new


def test_shards_are_roughly_balanced_and_depend_on_the_suite() -> None:
    sizes = [len(select(_cases(400), k, 4)) for k in range(1, 5)]
    assert min(sizes) > 60
    assert shard_of("a", "same-id", 1000) != shard_of("b", "same-id", 1000)


def test_parse_shard() -> None:
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "2-4", "x/y", "1/0"):
        with pytest.raises(UsageError):
            parse_shard(bad)


def _shard_exports(tmp_path: Path, **run_kw: object) -> list[Path]:
    """Two shard runs of one suite exported to folders, as a CI matrix would produce."""
    cases = [
        CaseSpec("c1", [OK] * 5),
        CaseSpec("c2", [OK, OK, WRONG, WRONG, OK]),
        CaseSpec("c3", [OK, TRANSPORT, OK, OK, OK], outputs=["a\x00b", "", "é\r\n", "x", "y"]),
        CaseSpec("c4", [WRONG] * 5),
    ]
    folders = []
    with RunStore.open(tmp_path / "ci.db") as store:
        for k, chunk in enumerate((cases[:2], cases[2:]), start=1):
            kw = dict(run_kw) if k == 2 else {}
            spec = RunSpec(f"shard{k}", chunk, started_at=f"2026-01-0{k}T00:00:00.000+00:00")
            for key, value in kw.items():
                setattr(spec, key, value)
            write_run(store, spec)
            folders.append(export_run(store, spec.run_id, tmp_path / f"shard-{k}"))
    return folders


def test_merge_round_trip(tmp_path: Path) -> None:
    folders = _shard_exports(tmp_path)
    merged = merge_exports(folders)
    assert [c.case_id for c in merged.cases] == ["c1", "c2", "c3", "c4"]
    assert sum(1 for _ in merged.iter_samples()) == 20
    assert merged.run.result is RunResult.RED
    assert merged.run.started_at.startswith("2026-01-01")
    assert merge_exports(list(reversed(folders))).run.id == merged.run.id

    write_merged(merged, out=tmp_path / "merged", store=None)
    with RunStore.open(tmp_path / "fresh.db") as fresh:
        run = import_run(fresh, tmp_path / "merged")
        assert run.id == merged.run.id
        assert {c.case_id: c.passes for c in fresh.cases(run.id)} == {
            "c1": 5,
            "c2": 3,
            "c3": 4,
            "c4": 0,
        }
        outputs = [s.output for s in fresh.samples(run.id, "c3")]
        assert outputs == ["a\x00b", "", "é\r\n", "x", "y"]
        assert dict(run.manifest) == {"suite-a/suite.yaml": "s1"}


def test_merge_refuses_different_models_and_manifests_listing_both(tmp_path: Path) -> None:
    folders = _shard_exports(
        tmp_path, model_id="openai:other-2025-01-01", manifest={"suite-a/suite.yaml": "s2"}
    )
    with pytest.raises(ProblemsError) as err:
        merge_exports(folders)
    text = str(err.value)
    assert "pinned model openai:other-2025-01-01 differs from local:model-a" in text
    assert "manifest entry suite-a/suite.yaml differs" in text
    assert "shard-2/results.json" in text


def test_merge_refuses_the_same_shard_twice_and_a_non_export(tmp_path: Path) -> None:
    folders = _shard_exports(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProblemsError) as err:
        merge_exports([folders[0], folders[0], tmp_path / "empty"])
    text = str(err.value)
    assert "the same run (shard1)" in text
    assert "empty/results.json" in text


def test_merge_cli_imports_into_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folders = _shard_exports(tmp_path)
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    code = main(["merge", *map(str, folders), "--out", "out/merged", "--import"])
    assert code == 0
    assert (tmp_path / "out/merged/results.json").is_file()
    with open_store(tmp_path) as store:
        latest = store.runs()[0]
        assert latest.args["merged_from"] == ["shard1", "shard2"]
        assert len(store.samples(latest.id)) == 20
    assert main(["merge", *map(str, folders)]) == 2


def _matrix_exports(tmp_path: Path, shards: Sequence[tuple[int, int]]) -> list[Path]:
    """One export per `(K, N)` shard of a CI matrix, each with the case it owns."""
    folders = []
    with RunStore.open(tmp_path / "matrix.db") as store:
        for k, n in shards:
            spec = RunSpec(
                f"s{k}of{n}-{len(folders)}",
                [CaseSpec(f"c{k}-{len(folders)}", [OK] * 5)],
                args={"shard": [k, n]},
            )
            write_run(store, spec)
            folders.append(export_run(store, spec.run_id, tmp_path / f"shard-{len(folders)}"))
    return folders


def test_merge_refuses_a_matrix_with_a_shard_missing(tmp_path: Path) -> None:
    # Shard 2 of 3 died in CI and uploaded nothing: the merge must not look complete.
    folders = _matrix_exports(tmp_path, [(1, 3), (3, 3)])
    with pytest.raises(ProblemsError) as err:
        merge_exports(folders)
    assert "no export of shard 2/3" in str(err.value)
    assert "--allow-missing" in str(err.value)

    merged = merge_exports(folders, allow_missing=True)
    assert merged.missing == ("2/3",)
    assert merged.run.args["missing_shards"] == ["2/3"]
    assert merge_exports(_matrix_exports(tmp_path / "full", [(1, 2), (2, 2)])).missing == ()


def test_merged_run_keeps_the_shards_common_filters(tmp_path: Path) -> None:
    # A nightly `--tier quality --shard K/N` matrix merges into a quality-only run: saving
    # it as a baseline must not drop the contract cases' accepted entries.
    folders = []
    with RunStore.open(tmp_path / "m.db") as store:
        for k in (1, 2):
            spec = RunSpec(f"q{k}", [CaseSpec(f"c{k}", [OK] * 5)])
            spec.args = {"tier": "quality", "shard": [k, 2], "samples": k}
            write_run(store, spec)
            folders.append(export_run(store, spec.run_id, tmp_path / f"q{k}"))
    merged = merge_exports(folders)
    assert merged.run.args == {"tier": "quality", "merged_from": ["q1", "q2"]}
    assert is_partial_run(merged.run)


def test_merge_refuses_mixed_splits_and_a_shard_given_twice(tmp_path: Path) -> None:
    with pytest.raises(ProblemsError) as err:
        merge_exports(_matrix_exports(tmp_path / "mixed", [(1, 2), (2, 3)]))
    assert "shard 2/3 is of another split" in str(err.value)
    with pytest.raises(ProblemsError) as err:
        merge_exports(_matrix_exports(tmp_path / "twice", [(1, 2), (1, 2), (2, 2)]))
    assert "shard 1/2 is also exported in" in str(err.value)


def test_merge_cli_names_the_missing_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folders = _matrix_exports(tmp_path, [(2, 2)])
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["merge", *map(str, folders), "--out", "merged"]) == 2
    assert "no export of shard 1/2" in capsys.readouterr().err
    assert not (tmp_path / "merged").exists()
    assert main(["merge", *map(str, folders), "--out", "merged", "--allow-missing"]) == 0
    assert "partial: no export of shard 1/2" in capsys.readouterr().out


def test_a_malformed_sample_in_two_shards_names_both_and_stores_or_writes_nothing(
    tmp_path: Path,
) -> None:
    folders = _shard_exports(tmp_path)
    for folder, lineno in zip(folders, (3, 8), strict=True):
        samples = folder / "samples.jsonl"
        lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
        lines[lineno - 1] = '{"suite": "suite-a", "case_id": "cut off\n'
        samples.write_text("".join(lines), encoding="utf-8")
    merged = merge_exports(folders)
    with RunStore.open(tmp_path / "target.db") as store:
        with pytest.raises(ProblemsError) as caught:
            write_merged(merged, out=None, store=store)
        assert not store.has_run(merged.run.id), "nothing of the merged run is committed"
    text = str(caught.value)
    assert "shard-1/samples.jsonl:3: malformed sample" in text
    assert "shard-2/samples.jsonl:8: malformed sample" in text
    with pytest.raises(ProblemsError):
        write_merged(merged, out=tmp_path / "merged", store=None)
    assert not (tmp_path / "merged" / "samples.jsonl").exists()
    assert not (tmp_path / "merged" / "results.json").exists()


def test_merged_export_interleaves_the_shards_in_case_order_byte_for_byte(tmp_path: Path) -> None:
    # Each case in the shard its hash gives it: the merged file is in (suite, case, index)
    # order across shards, every line as the shard wrote it.
    with RunStore.open(tmp_path / "ci.db") as store:
        folders = []
        for k, ids in enumerate((["a", "c", "e"], ["b", "d"]), start=1):
            spec = RunSpec(f"inter{k}", [CaseSpec(i, [OK, WRONG]) for i in ids])
            write_run(store, spec)
            folders.append(export_run(store, spec.run_id, tmp_path / f"shard-{k}"))
    merged = merge_exports(folders)
    assert write_merged(merged, out=tmp_path / "merged", store=None) == 10
    lines = (tmp_path / "merged" / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    shard_lines = {
        line for f in folders for line in (f / "samples.jsonl").read_text("utf-8").splitlines()
    }
    assert set(lines) == shard_lines
    with RunStore.open(tmp_path / "fresh.db") as fresh:
        run = import_run(fresh, tmp_path / "merged")
        order = [(s.case_id, s.index) for s in fresh.samples(run.id)]
    assert order == [(c, i) for c in "abcde" for i in (0, 1)]
    assert [line.split('"case_id": "')[1][0] for line in lines] == [
        c for c in "abcde" for _ in (0, 1)
    ]


def test_store_streams_a_run_of_several_batches_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import redline.running.store as store_module

    monkeypatch.setattr(store_module, "_BATCH", 7)
    spec = RunSpec("many", [CaseSpec(f"c{i:02d}", [OK, WRONG, OK]) for i in range(10)])
    with RunStore.open(tmp_path / "s.db") as store:
        write_run(store, spec)
        streamed = list(store.iter_samples("many"))
        assert streamed == store.samples("many")
    assert len(streamed) == 30 and any(s.assertions for s in streamed)
