"""What patcher tells about a checkpoint on an engine: check (findings), doctor (a server's
log), kv-budget (memory) and overrides (the engine flags that do what the edits do).

Imports the engine model (``patcher.engines``) and the layers below it; never ``patcher.ops``.
"""
