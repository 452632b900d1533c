"""The engine model: what an engine derives from a checkpoint's files, per version.

Pure Python, never imports an engine. Its rules are compared with what the real engines derive
(``snapshots/engines/``, recorded by ``tools/record_engines.py``) by the test suite.
"""
