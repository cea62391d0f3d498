"""Positioned documents: YAML and TOML read with line and column, checked by one reader."""
