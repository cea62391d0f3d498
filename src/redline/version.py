"""The version redline records in every run's manifest and prints with --version."""

__version__ = "0.1.0"
