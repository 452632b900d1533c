"""Text: the format-preserving JSON editor, its scanner (with the optional C half), and diffs.

The bottom layer: imports nothing of patcher but ``errors``. Knows bytes and JSON, not files.
"""
