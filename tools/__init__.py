"""The project's tools, not tests: the recorders that read an engine release (from its wheel,
or a venv with it installed) into ``snapshots/engines/`` and the package data the tests replay,
the probes those run, and the benchmark. Run each as ``python -m tools.NAME``; none is needed
to use patcher or to run its tests (docs/development.md)."""
