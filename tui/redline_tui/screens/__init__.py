"""The triage app's screens, one module per step or view."""
