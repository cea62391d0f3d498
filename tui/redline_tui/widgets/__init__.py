"""Reusable widgets of the triage app."""
