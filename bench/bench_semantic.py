"""Semantic assertions on CPU: 1,000 outputs × (mentions + tone) with the default backend.

    uv run python bench/bench_semantic.py [--outputs 1000]

Prints model load time, calibration time, and outputs per second for mentions and tone
on fresh outputs (each check embeds the output's sentences in its own e5 role), and for
further checks on an output already embedded (several assertions on one sample).
Run it on an idle machine: the engine uses both cores.
"""

from __future__ import annotations

import argparse
import statistics
import time

from redline.semantic.calibration import load_calibration
from redline.semantic.embeddings import load_embeddings
from redline.semantic.glossary import shipped_glossary
from redline.semantic.scorer import SemanticScorer
from redline.semantic.settings import SemanticSettings
from redline.semantic.tones import load_tones
from redline.text.sentences import split_sentences

_OPENINGS = (
    "Thanks for reaching out about order {n}.",
    "We are sorry for the delay with order {n}.",
    "Terima kasih telah menghubungi kami soal pesanan {n}.",
    "感谢您关于订单{n}的来信。",
)
_BODIES = (
    "Your refund of ${n} has been issued and reaches your card within five days.",
    "The parcel left our warehouse on day {n} and should arrive next week.",
    "Dana sebesar Rp{n}.000 sudah kami kembalikan ke rekening Anda.",
    "我们已经把{n}元退回到您的银行卡。",
    "Bạn sẽ nhận lại {n} nghìn đồng trong vòng một tuần.",
)


def outputs(count: int) -> list[str]:
    """Distinct, support-reply-like outputs of two or three sentences in four languages."""
    texts = []
    for n in range(count):
        opening = _OPENINGS[n % len(_OPENINGS)].format(n=1000 + n)
        body = _BODIES[n % len(_BODIES)].format(n=10 + n)
        closing = " Let us know if anything else comes up." if n % 3 == 0 else ""
        texts.append(f"{opening} {body}{closing}")
    return texts


def mentions_cpu(scorer: SemanticScorer, texts: list[str]) -> tuple[float, float]:
    """Median CPU ms of one `mentions` check, and of encoding all of the output's sentences
    and comparing them (no literal shortcut, no reuse of sentences seen before)."""
    own, naive = [], []
    target = scorer.embeddings.embed_fixed(["refund"], "query")[0]
    for text in texts:
        start = time.process_time()
        scorer.concept(text, "refund")
        own.append(time.process_time() - start)
        start = time.process_time()
        float((scorer.embeddings.embed(split_sentences(text), "passage") @ target).max())
        naive.append(time.process_time() - start)
    return statistics.median(own) * 1000, statistics.median(naive) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs", type=int, default=1000)
    args = parser.parse_args()
    settings = SemanticSettings()

    start = time.perf_counter()
    embeddings = load_embeddings(settings)
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    calibration = load_calibration(embeddings, None)
    calibrate_s = time.perf_counter() - start
    scorer = SemanticScorer(embeddings, calibration, load_tones(), shipped_glossary())
    texts = outputs(args.outputs)
    sentences = sum(len(t.split(". ")) for t in texts)

    mentions_s = tone_s = 0.0
    mentioned = apologetic = 0
    for text in texts:
        start = time.perf_counter()
        mentioned += scorer.concept(text, "refund").calibrated >= 0.5
        middle = time.perf_counter()
        apologetic += scorer.tone(text, "apologetic").winner == "apologetic"
        tone_s += time.perf_counter() - middle
        mentions_s += middle - start
    start = time.perf_counter()
    for text in texts[-100:]:
        scorer.concept(text, "delivery delay")
        scorer.tone(text, "empathetic")
    cached_s = (time.perf_counter() - start) / 100

    own, naive = mentions_cpu(scorer, outputs(args.outputs + 200)[args.outputs :])
    n = len(texts)
    print(f"backend              {embeddings.name}")
    print(f"model load           {load_s * 1000:8.1f} ms")
    print(
        f"calibration          {calibrate_s:8.2f} s  ({len(calibration.by_pair)} language pairs, "
        f"accuracy {calibration.accuracy:.0%}, computed once per backend)"
    )
    print(f"outputs              {n}  (~{sentences} sentences)")
    print(f"mentions             {n / mentions_s:8.1f} outputs/s  ({mentioned} mention 'refund')")
    print(f"tone                 {n / tone_s:8.1f} outputs/s  ({apologetic} apologetic)")
    print(f"mentions + tone      {n / (mentions_s + tone_s):8.1f} outputs/s")
    print(f"more checks, same    {1 / cached_s:8.1f} outputs/s  (another concept and tone on an")
    print("                                          output whose sentences are embedded)")
    print(
        f"mentions, CPU        {own:8.1f} ms per check on fresh outputs (median); encoding "
        f"every sentence of each output: {naive:.1f} ms, ratio {own / naive:.2f}"
    )


if __name__ == "__main__":
    main()
