from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

# Before anything imports huggingface_hub (it reads these once): the suite's Hugging Face
# home is a folder of its own, never the user's ~/.cache/huggingface.
_SANDBOX = Path(tempfile.mkdtemp(prefix="patcher-tests-hf-"))
atexit.register(shutil.rmtree, _SANDBOX, ignore_errors=True)  # one per worker, none left behind
os.environ["HF_HOME"] = str(_SANDBOX / "hf-home")
for _name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_XET_CACHE", "HF_ASSETS_CACHE"):
    os.environ.pop(_name, None)

import pytest  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from patcher.cli.app import app  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = ROOT / "snapshots"
CONFIGS = SNAPSHOTS / "configs"
EXAMPLE = SNAPSHOTS / "example" / "kimi-k2.5-nvfp4"  # the README's example checkpoint
MODELS = sorted(p.name for p in CONFIGS.iterdir() if p.is_dir())


def wheel_of(path: Path, files: dict[str, str]) -> zipfile.ZipFile:
    """A wheel holding ``files`` (name to source), opened for a reader of wheels to read."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return zipfile.ZipFile(path)


def snapshot_section(reading: str, title: str) -> list[list[str]]:
    """The tab-separated rows of a snapshot's section: the lines after the first comment line
    starting ``# TITLE``, up to the next comment line."""
    lines = reading.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"# {title}"))
    rows: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        rows.append(line.split("\t"))
    return rows


def tree_bytes(directory: Path) -> dict[str, bytes | str]:
    """Every file's bytes (or a symlink's target) under ``directory``, except the journal."""
    found: dict[str, bytes | str] = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        if rel.startswith(".patcher"):
            continue
        if path.is_symlink():
            found[rel] = "-> " + str(path.readlink())
        elif path.is_file():
            found[rel] = path.read_bytes()
    return found


def build_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``files`` (relative path -> content) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def model_checkpoint(tmp_path: Path) -> Callable[[str], Path]:
    """Copy a real snapshot model into ``tmp_path`` and return its directory."""

    def make(model: str) -> Path:
        target = tmp_path / model
        shutil.copytree(CONFIGS / model, target)
        for path in target.iterdir():
            path.chmod(0o644)
        return target

    return make


@pytest.fixture
def kimi(tmp_path: Path) -> Path:
    """The README's example checkpoint, copied."""
    target = tmp_path / "kimi"
    shutil.copytree(EXAMPLE, target)
    return target


class Cli:
    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str | Path) -> tuple[int, str, str]:
        result = self.runner.invoke(app, [str(a) for a in args])
        return result.exit_code, result.stdout, result.stderr


@pytest.fixture(autouse=True)
def _own_hugging_face_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test's Hugging Face home and cache are under its tmp_path (a test that wants a
    cache of its own sets HF_HUB_CACHE itself), so no test reads or writes the user's."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    # patcher's own cache (the installed engines' answers), never the user's
    monkeypatch.setenv("PATCHER_CACHE_DIR", str(tmp_path / "patcher-cache"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    yield


@pytest.fixture
def cli() -> Cli:
    return Cli()


# The slow tests: the end-to-end fault sweeps, the crash and concurrency stress, a real full
# disk, Ansible, wheel builds, and journal growth over thousands of entries. The README's test
# command leaves them out (pyproject's addopts: -m "not slow"); .ci/run runs them too, always
# (python -m pytest -m slow). By file, and by test where a file holds both kinds.
SLOW_FILES = frozenset(
    {
        "test_fault_sweep.py",
        "test_crash_and_concurrency.py",
        "test_full_disk.py",
        "test_fleet.py",
        "test_packaging.py",
    }
)
SLOW_TESTS = frozenset(
    {
        "test_journal_growth_over_thousands_of_entries_stays_bounded",
        "test_the_hub_tests_write_nothing_under_home",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SLOW_FILES or item.name.split("[")[0] in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
