"""A checkpoint directory: which files it holds, and safe paths into it.

Only the files a transform or the journal names are ever opened; weight shards next to them
are never read (listing the directory does not open them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from patcher.errors import CheckpointError, UnsafePathError

CONFIG_FILES = (
    "config.json",
    "hf_quant_config.json",
    "generation_config.json",
    "tokenizer_config.json",
)
JOURNAL_DIR = ".patcher"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint directory (absolute path) that holds at least one config file."""

    root: Path

    @property
    def journal_dir(self) -> Path:
        """Where the journal, the original bytes and the lock live."""
        return self.root / JOURNAL_DIR

    def path(self, relative: str) -> Path:
        """The path of ``relative`` inside the checkpoint, refusing anything that leads out."""
        return self.root / safe_relative(self.root, relative)

    def link_target(self, relative: str) -> str | None:
        """The symlink target of ``relative`` if it is a link, else None."""
        path = self.path(relative)
        return str(path.readlink()) if path.is_symlink() else None


def open_checkpoint(path: Path | str) -> Checkpoint:
    """Check that ``path`` is a checkpoint directory and return it."""
    root = Path(path).expanduser().absolute()
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "does not exist"
        raise CheckpointError(
            f"checkpoint {what}",
            file=root,
            hint="pass the folder that holds config.json "
            "(e.g. 'hf download ORG/NAME --local-dir DIR')",
        )
    if not any((root / name).is_file() for name in CONFIG_FILES):
        raise CheckpointError(
            f"no config files here (looked for {', '.join(CONFIG_FILES)})",
            file=root,
            hint="pass the folder that holds config.json",
        )
    return Checkpoint(root)


def _inside(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def safe_relative(root: Path, relative: str) -> PurePosixPath:
    """Validate a checkpoint-relative path: no absolute paths, no '..', no symlinked folders,
    and a symlinked file must lead inside the checkpoint (or into its Hugging Face cache blobs).
    """
    rel = PurePosixPath(relative)
    if rel.is_absolute() or relative.startswith("\\") or relative[1:2] == ":":
        raise UnsafePathError(
            "absolute path outside the checkpoint",
            file=relative,
            hint="name files relative to the checkpoint, e.g. 'config.json'",
        )
    if not rel.parts or any(part in ("..", ".", "") for part in rel.parts):
        raise UnsafePathError(
            "path leads outside the checkpoint ('..' is not allowed)",
            file=relative,
            hint="name files relative to the checkpoint",
        )
    current = root
    for part in rel.parts[:-1]:
        current = current / part
        if current.is_symlink():
            raise UnsafePathError(
                "folder is a symlink; patcher never writes through a link",
                file=current,
                hint="name a file in a real folder of the checkpoint",
            )
    final = root / rel
    if final.is_symlink():
        resolved = final.resolve()
        allowed = [root.resolve()]
        if root.parent.name == "snapshots":
            allowed.append((root.parent.parent / "blobs").resolve())
        if not any(_inside(resolved, base) for base in allowed):
            raise UnsafePathError(
                f"symlink leads outside the checkpoint (to {resolved})",
                file=final,
                hint="copy the file into the checkpoint, or use an overlay",
            )
    return rel
