"""The redline triage app (Textual), a client of the redline engine."""
