"""CI: slices of a suite for a CI matrix, the starter workflow, and runs CI stored as artifacts.

`redline pull` lists, downloads and imports those runs through a `CiProvider`
(GitHub Actions today; `redline.ci.pull.pull` works with any).
"""
