"""Model providers: OpenAI-compatible, Anthropic, and the embedded local model."""

from redline.providers.base import Provider
from redline.providers.factory import make_provider

__all__ = ["Provider", "make_provider"]
