"""patcher's version: a leaf that imports nothing, so every layer may record it."""

__version__ = "0.1.0"
