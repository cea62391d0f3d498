"""The team's own code as what answers a case: a python function, an HTTP endpoint, a command.

A suite names `target:` instead of (or beside) `model:`; `targets.spec` reads and checks
it with the suite, `targets.factory.make_target` builds the `Provider` that calls it.
"""
