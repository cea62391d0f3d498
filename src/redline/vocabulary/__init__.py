"""The words every layer shares: verdicts, records, outcomes, the sequential rule, completions."""
