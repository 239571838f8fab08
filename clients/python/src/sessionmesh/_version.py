"""The package's version: the same string as meshd's (`SessionMeshVersion.current` in Swift) and
pyproject.toml's; the Swift test suite's VersionConsistencyTests fails when they differ."""

__version__ = "0.1.0"
