"""Model providers: OpenAI-compatible, Anthropic, the embedded local model, and replay.

`providers.base.Provider` is the interface; `providers.factory.make_provider` builds one
from a pinned model. Nothing is imported here, so reading a record (which needs
`providers.completion`) does not load the HTTP stack.
"""
