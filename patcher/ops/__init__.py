"""The operations: apply, revert, reapply, rebuild (replace, sync, rebase), plan, targets and
profiles, and the offline and upstream diffs.

May import every layer below: text, store, transforms, engines, advice.
"""
