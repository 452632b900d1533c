"""patcher: named, reversible, journalled edits to the config files of a model checkpoint."""

from __future__ import annotations

__version__ = "0.1.0"
