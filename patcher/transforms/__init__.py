"""The transform model: transform files, their parameters, the compiler to JSON Patches, and
the built-in catalog (``transforms/*.toml``, installed as ``patcher/transforms/builtin``).

Imports only ``patcher.text``, ``patcher.store`` and the leaf modules.
"""
