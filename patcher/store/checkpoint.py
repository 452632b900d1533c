"""A checkpoint directory: which files it holds, and safe paths into it.

Only the files a transform or the journal names are ever opened; weight shards next to them
are never read (listing the directory does not open them).
"""

from __future__ import annotations

import errno
import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from patcher.errors import CheckpointError, UnsafePathError
from patcher.store.beneath import open_beneath, open_link_target
from patcher.store.hfcache import parse_repo_ref, resolve_snapshot

CONFIG_FILES = (
    "config.json",
    "hf_quant_config.json",
    "generation_config.json",
    "tokenizer_config.json",
)
JOURNAL_DIR = ".patcher"
# Weight files by their suffix: patcher never opens one, whoever names it (promise 6).
WEIGHT_SUFFIXES = (
    ".safetensors",
    ".bin",
    ".pt",
    ".pth",
    ".ckpt",
    ".gguf",
    ".h5",
    ".msgpack",
    ".onnx",
    ".npy",
    ".npz",
    ".pkl",
)


OVERLAY_FILE = "overlay.json"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint directory (absolute path) that holds at least one config file.

    ``link_bases`` are where its symlinked files may lead: the checkpoint itself, the ``blobs``
    of a Hugging Face cache snapshot, and the source of an overlay.
    """

    root: Path
    link_bases: tuple[Path, ...] = ()
    overlay_source: Path | None = None
    named: str | None = None  # how the user named it (a relative path, ORG/NAME@REV)
    overlay_moved_from: tuple[str, ...] = ()  # an overlay's former sources (the store moved)

    @property
    def arg(self) -> str:
        """The checkpoint as the user typed it, quoted for a shell: what suggested commands
        echo (``nvidia/Kimi-K2.5-NVFP4``, not the snapshot path it resolves to)."""
        import shlex

        return shlex.quote(self.named or str(self.root))

    @property
    def journal_dir(self) -> Path:
        """Where the journal, the original bytes and the lock live."""
        return self.root / JOURNAL_DIR

    def path(self, relative: str) -> Path:
        """The path of ``relative`` inside the checkpoint, refusing anything that leads out."""
        path = self.root / safe_relative(self.root, relative, self.link_bases)
        source = self.overlay_source
        if source is not None and path.is_symlink():
            try:
                resolved = path.resolve()
            except OSError:  # swapped for a file meanwhile: the open itself decides
                return path
            own = [b for b in self.link_bases if b != source]
            if (
                not any(_inside(resolved, b) for b in own)
                and resolved != (source / relative).resolve()
            ):
                # An overlay links each file to the same file of its source, nothing else.
                raise UnsafePathError(
                    f"overlay link leads to {resolved}, not to the same file of its source",
                    file=path,
                    hint="recreate the overlay with 'patcher apply SOURCE NAME --overlay OUT'",
                )
        return path

    def restored_link(self, relative: str, link: str) -> str:
        """The link to put back for ``relative``: ``link`` as the journal recorded it, or, in
        an overlay whose store has moved since, the same file of its source now."""
        source = self.overlay_source
        if source is not None and any(
            Path(link) == Path(old) / relative for old in self.overlay_moved_from
        ):
            link = str(source / relative)
        # The link comes from the journal, a file anyone may edit: it must lead where the
        # checkpoint's own links may (itself, a cache snapshot's blobs, an overlay's source).
        here = self.path(relative)
        resolved = (here.parent / link).resolve()
        if not any(_inside(resolved, base) for base in self.link_bases or (self.root.resolve(),)):
            raise UnsafePathError(
                f"the journal records a link to {link}, which leads outside the checkpoint",
                file=here,
                hint=f"the journal was edited by hand: inspect {self.journal_dir / 'journal.json'}",
            )
        return link

    def link_target(self, relative: str) -> str | None:
        """The symlink target of ``relative`` if it is a link, else None."""
        path = self.path(relative)
        try:
            return str(path.readlink())
        except OSError as exc:  # not a link (EINVAL), or gone: never an error of its own
            if exc.errno in (errno.EINVAL, errno.ENOENT, errno.ENOTDIR):
                return None
            raise

    def open(self, relative: str) -> int:
        """A read-only descriptor of the regular file ``relative``: the one way a checkpoint
        file is read (``beneath.open_beneath``: no link is followed out, whatever another
        process does to the folder meanwhile). FileNotFoundError when it is absent."""
        self.path(relative)  # its name, and an overlay's links lead to the same file of its source
        return open_beneath(self.root, relative, self._read_bases())

    def open_link(self, relative: str, link: str) -> int:
        """A descriptor of the file that ``link``, a link recorded for ``relative``, leads to:
        opened as :meth:`open` opens, only inside the checkpoint's own bases."""
        folder = (self.root / relative).parent.resolve()
        return open_link_target(folder, link, self._read_bases())

    def _read_bases(self) -> tuple[Path, ...]:
        # The checkpoint itself first, then the cache snapshot's or overlay's bases.
        return (self.root.resolve(), *self.link_bases)


def open_checkpoint(path: Path | str, revision: str | None = None) -> Checkpoint:
    """Check that ``path`` is a checkpoint directory (or ``ORG/NAME[@REVISION]``, a repository
    in the local Hugging Face cache; ``revision`` is the same as ``@REVISION``) and return it."""
    if revision is not None:
        path = f"{path}@{revision}"
    root = Path(path).expanduser().absolute()
    if not root.exists() and isinstance(path, str):
        ref = parse_repo_ref(path)
        if ref is not None:
            root = resolve_snapshot(ref)
    if not root.is_dir():
        if root.is_file():
            raise CheckpointError(
                "is a file; patcher takes the checkpoint folder",
                file=root,
                hint=f"pass its folder: {root.parent}",
            )
        if isinstance(path, str) and "@" in path and parse_repo_ref(path) is None:
            raise CheckpointError(
                "checkpoint does not exist (--revision and @REV apply to ORG/NAME repository "
                "ids in the Hugging Face cache, not to folders)",
                file=path.partition("@")[0],
                hint="drop --revision for a folder",
            )
        raise CheckpointError(
            "checkpoint does not exist",
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
    bases = [root.resolve()]
    blobs = root.resolve().parent.parent / "blobs"
    if root.resolve().parent.name == "snapshots" and blobs.is_dir() and not blobs.is_symlink():
        # Trusted only as the real folder beside snapshots/: a blobs that is a link (to /, say)
        # would make every link look as if it led into the cache.
        bases.append(blobs)
    overlay = root / JOURNAL_DIR / OVERLAY_FILE
    source = None
    if overlay.is_file():
        damaged = CheckpointError(
            "overlay record is damaged, or its source is not a checkpoint",
            file=overlay,
            hint="recreate the overlay with 'patcher apply SOURCE NAME --overlay OUT'",
        )
        try:
            record = json.loads(overlay.read_text())
            source = Path(record["source"]).resolve()
            moves = record.get("moved_from", [])
            if not isinstance(moves, list) or not all(isinstance(m, str) for m in moves):
                raise TypeError("moved_from is not a list of paths")
            moved_from = tuple(moves)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            raise damaged from None
        if not source.exists():
            raise CheckpointError(
                f"the overlay's source {source} is gone (moved or deleted), so its links lead "
                "nowhere",
                file=root,
                hint="run the overlay's apply or sync again with the store where it is now "
                f"(e.g. patcher sync NEW_SOURCE --profile P --overlay {root}): it re-points "
                "the overlay and keeps its patched files",
            )
        # Trusted as a link target only if it really is a checkpoint folder.
        if not source.is_dir() or not any((source / n).is_file() for n in CONFIG_FILES):
            raise damaged
        if record.get("creating"):
            raise CheckpointError(
                f"a half-made overlay of {source}: its creation was interrupted",
                file=root,
                hint=f"finish it: run the same apply or sync with --overlay {root} again "
                "(or remove the folder)",
            )
        bases.append(source)
        return Checkpoint(root, tuple(bases), source, str(path), moved_from)
    return Checkpoint(root, tuple(bases), source, str(path))


def _inside(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def name_problem(relative: str) -> tuple[str, str] | None:
    """What makes ``relative`` unfit to name a file patcher may open, on its face (the problem
    and the next step), or None: an absolute path, '..', or a weight file."""
    rel = PurePosixPath(relative)
    if rel.is_absolute() or relative.startswith("\\") or relative[1:2] == ":":
        return (
            "absolute path outside the checkpoint",
            "name files relative to the checkpoint, e.g. 'config.json'",
        )
    if not rel.parts or any(part in ("..", ".", "") for part in rel.parts):
        return (
            "path leads outside the checkpoint ('..' is not allowed)",
            "name files relative to the checkpoint",
        )
    if rel.parts[0] == JOURNAL_DIR:
        return (
            "is inside .patcher/, patcher's own journal folder; no transform edits it",
            "name a config file of the checkpoint, such as 'config.json'",
        )
    if rel.name.lower().endswith(WEIGHT_SUFFIXES):
        return (
            "is a weight file; patcher never opens weights",
            "name a config file such as 'config.json'",
        )
    return None


def safe_relative(root: Path, relative: str, link_bases: tuple[Path, ...] = ()) -> PurePosixPath:
    """Validate a checkpoint-relative path: no absolute paths, no '..', no symlinked folders,
    and a symlinked file must lead inside one of ``link_bases`` (by default the checkpoint).
    """
    problem = name_problem(relative)
    if problem is not None:
        raise UnsafePathError(problem[0], file=relative, hint=problem[1])
    rel = PurePosixPath(relative)
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
        try:
            resolved = final.resolve()
        except OSError:  # swapped for a file meanwhile: the open itself decides (beneath)
            return rel
        if not any(_inside(resolved, base) for base in link_bases or (root.resolve(),)):
            raise UnsafePathError(
                f"symlink leads outside the checkpoint (to {resolved})",
                file=final,
                hint="copy the file into the checkpoint, or use an overlay",
            )
    return rel
