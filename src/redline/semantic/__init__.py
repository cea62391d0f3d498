"""Semantic scoring: embeddings, calibration, tone templates and NLI for Layer 2 checks."""

from __future__ import annotations

from redline.semantic.embeddings import BackendUnavailable, EmbeddingBackend, load_embeddings
from redline.semantic.scorer import ConceptMatch, SemanticScorer, ToneMatch, semantic_scorer
from redline.semantic.settings import SemanticSettings, semantic_settings

__all__ = [
    "BackendUnavailable",
    "ConceptMatch",
    "EmbeddingBackend",
    "SemanticScorer",
    "SemanticSettings",
    "ToneMatch",
    "load_embeddings",
    "semantic_scorer",
    "semantic_settings",
]
