"""The words every layer shares: verdicts, records, outcomes, the sequential rule,
completions, causes and triage states, tiers."""
