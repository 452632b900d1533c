"""The units of memory, defined once: GiB and MiB as vLLM counts them (powers of two)."""

from __future__ import annotations

KIB = 1024
MIB = 1024**2
GIB = 1024**3
