"""`redline search RUN_ID TEXT`: which samples of a run say this."""

from __future__ import annotations

import argparse

from rich.text import Text

from redline.cli.output import make_console, print_json
from redline.cli.show import require_store
from redline.config import load_config
from redline.presentation import VERDICT_STYLES
from redline.running.search import search_run
from redline.running.store import RunStore
from redline.textsafe import escape_output


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "search",
        description="Substring search, case-insensitive, in any script, over every sample of "
        "a run. Prints suite/case#sample, verdict, where the text was found and the line.",
    )
    parser.add_argument("run_id", metavar="RUN_ID", help="a run id or a unique prefix")
    parser.add_argument("text", metavar="TEXT", help="the word or phrase to find")
    parser.add_argument("--limit", type=int, default=500, metavar="N", help="default 500")
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="json: one document, the hits under `hits`",
    )
    parser.set_defaults(handler=_search)


def _search(args: argparse.Namespace) -> int:
    config = load_config()
    with RunStore.open(require_store(config.store_path)) as store:
        hits = search_run(store, args.run_id, args.text, limit=max(1, args.limit))
    if args.format == "json":
        hits_json = [
            {
                "suite": h.suite,
                "case_id": h.case_id,
                "sample": h.index,
                "verdict": str(h.verdict),
                "found_in": h.found_in,
                "snippet": h.snippet,
            }
            for h in hits
        ]
        print_json({"run": args.run_id, "text": args.text, "hits": hits_json})
        return 0
    console = make_console()
    for h in hits:
        line = Text(f"{h.suite}/{h.case_id}#{h.index} ", style="cyan")
        line.append(f"{h.verdict:<9}", style=VERDICT_STYLES.get(h.verdict, ""))
        line.append(f" {h.found_in}: ", style="dim")
        line.append(escape_output(h.snippet[: h.start]))
        line.append(escape_output(h.snippet[h.start : h.end]), style="bold reverse")
        line.append(escape_output(h.snippet[h.end :]))
        console.print(line, soft_wrap=True)
    cases = len({(h.suite, h.case_id) for h in hits})
    console.print(Text(f"{len(hits)} sample(s) in {cases} case(s)", style="bold"))
    return 0
