"""Deciding: baselines, comparisons, history, reruns and the statistics behind a verdict."""
