"""The store on disk: atomic IO, the lock, the checkpoint and the Hugging Face cache layout,
overlays, the journal, the write session, recovery, and the status of journalled files.

Imports only ``patcher.text`` and the leaf modules (``errors``, ``progress``, ``version``).
"""
