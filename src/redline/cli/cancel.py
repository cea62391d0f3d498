"""`redline cancel RUN_ID`: stop the provider batches a run is waiting for."""

from __future__ import annotations

import argparse
import asyncio
import sys

from redline.cli.show import require_store
from redline.config import Config, ModelRef, load_config
from redline.errors import ConfigError, UsageError
from redline.providers.base import Provider
from redline.providers.batching import BatchApi, Cancelled, cancel_pending
from redline.providers.factory import batch_api, make_provider
from redline.running.store import RunStore
from redline.vocabulary.records import RunRecord


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "cancel",
        description="Cancel the provider batches a run is waiting for (`redline run --batch`). "
        "Each pending batch is cancelled at its provider: what it answered is kept (and "
        "billed), the rest never runs. `redline run --resume RUN_ID` later collects the "
        "answers and sends what never ran again, in a new batch; a process still waiting on "
        "the batch ends inconclusive (exit 3).",
    )
    parser.add_argument("run_id", metavar="RUN_ID", help="run id or unique prefix")
    parser.set_defaults(handler=_cancel)


def _cancel(args: argparse.Namespace) -> int:
    config = load_config()
    with RunStore.open(require_store(config.store_path)) as store:
        run = store.run(args.run_id)
        batches = store.batches(run.id)
        if not batches:
            raise UsageError(
                f"run {run.id} sent no batches: only a run in batch mode (`redline run "
                "--batch`, or `batch = true` for its provider) has any to cancel"
            )
        if all(b.ended for b in batches):
            print(f"run {run.id}: no batch is pending ({len(batches)} batch(es), all ended)")
            return 0
        results = asyncio.run(_cancel_all(config, store, run))
    failed = [c for c in results if c.status is None]
    for cancelled in results:
        print(_said(cancelled), file=sys.stderr if cancelled.status is None else sys.stdout)
    if any(c.status is not None for c in results):
        print(
            f"the answered requests are kept in run {run.id}: `redline run --resume "
            f"{run.id}` collects them and sends what never ran again, in a new batch"
        )
    return 2 if failed else 0


async def _cancel_all(config: Config, store: RunStore, run: RunRecord) -> list[Cancelled]:
    providers: dict[str, Provider] = {}
    apis: dict[str, BatchApi] = {}

    def api_for(name: str) -> BatchApi:
        if name not in apis:
            providers[name] = make_provider(_model_on(config, name, run), config)
            apis[name] = batch_api(providers[name], run.id)
        return apis[name]

    try:
        return await cancel_pending(run.id, store, api_for)
    finally:
        for provider in providers.values():
            await provider.aclose()


def _model_on(config: Config, provider: str, run: RunRecord) -> ModelRef:
    """A pinned model on provider table `provider` (the run's own when it is one): whose
    key and address the batch calls use."""
    own = config.models.get(run.model_alias)
    if own is not None and own.provider == provider:
        return own
    for model in config.models.values():
        if model.provider == provider:
            return model
    raise ConfigError(
        f"run {run.id}'s batches went to provider {provider!r}, which no model in "
        f"{config.source.name} uses any more: pin a model on it under {config.table('models')} "
        "to cancel them"
    )


def _said(cancelled: Cancelled) -> str:
    batch, status = cancelled.batch, cancelled.status
    if status is None:
        return (
            f"batch {batch.batch_id} ({batch.provider}) could not be cancelled: "
            f"{cancelled.error}; run `redline cancel {batch.run_id}` again"
        )
    if not cancelled.asked:
        return f"{status.describe()}: it had already ended, nothing to cancel"
    return f"cancel sent: {status.describe()}"
