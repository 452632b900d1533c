"""Regression tests for the hardening issue, each named after the promise it protects."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patcher import api
from patcher.errors import ConflictError, JournalError, UnsafePathError, WriteError
from patcher.store import fsio, journal, lock
from patcher.store.fsio import sha256
from tests.conftest import CONFIGS, ROOT, Cli, tree_bytes


def _journal(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / ".patcher" / "journal.json").read_text())
    return data


def _write_journal(root: Path, data: dict[str, Any]) -> None:
    (root / ".patcher" / "journal.json").write_text(json.dumps(data))


# --- all or nothing -----------------------------------------------------------------------


def test_all_or_nothing_when_the_step_after_a_landed_write_fails(
    kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rename of config.json lands, then the directory fsync fails (EIO): the patched
    file must never be left behind an entry that was dropped."""
    original = tree_bytes(kimi)
    real = os.fsync
    folder = kimi.stat().st_ino

    def failing(fd: int) -> None:
        if os.fstat(fd).st_ino == folder:  # the checkpoint folder, after the rename
            raise OSError(errno.EIO, "I/O error")
        real(fd)

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(WriteError):
        api.apply(kimi, "strip-fp8-kv-cache")
    states = [e["state"] for e in _journal(kimi)["entries"]]
    # Rolled back and dropped; or, when the rollback's own fsync failed too, kept as a pending
    # record whatever the bytes are, for the next command to settle. Never patched and dropped.
    assert states == ["pending"] or (states == [] and tree_bytes(kimi) == original)
    monkeypatch.setattr(os, "fsync", real)
    assert api.status(kimi).applied == ()
    assert tree_bytes(kimi) == original and _journal(kimi)["entries"] == []


@pytest.mark.parametrize("code", [errno.EINVAL, errno.ENOTSUP])
def test_a_filesystem_without_folder_fsync_still_applies_and_reverts(
    cli: Cli, kimi: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """CIFS, Ceph and FUSE mounts such as gcsfuse answer a folder's fsync with EINVAL or
    ENOTSUP: patcher must work there (it used to fail every command after the rename)."""
    original = tree_bytes(kimi)
    real = os.fsync
    refused: list[int] = []

    def no_folder_sync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            refused.append(fd)
            raise OSError(code, os.strerror(code))
        real(fd)

    monkeypatch.setattr(os, "fsync", no_folder_sync)
    code_apply, out, err = cli("apply", kimi, "strip-fp8-kv-cache")
    assert code_apply == 0, err
    assert "kv_cache_scheme" not in (kimi / "config.json").read_text()
    assert cli("revert", kimi, "strip-fp8-kv-cache")[0] == 0
    assert refused and tree_bytes(kimi) == original
    assert [e["state"] for e in _journal(kimi)["entries"]] == ["reverted"]


def test_all_or_nothing_reapply_needs_no_template_file(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "llama"
    shutil.copytree(CONFIGS / "llama-3.1-8b-instruct-bnb8bit", root)
    pristine = tree_bytes(root)
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages }}")
    code, _, _ = cli("apply", root, "set-chat-template", "--set", f"template={template}")
    assert code == 0
    patched = tree_bytes(root)
    template.unlink()  # the journal holds what was applied, not the path
    for name, data in pristine.items():
        assert isinstance(data, bytes)
        (root / name).write_bytes(data)
    code, out, err = cli("reapply", root)
    assert code == 0, err
    assert "reapplied set-chat-template" in out and tree_bytes(root) == patched


def test_all_or_nothing_reapply_on_unpatched_checkpoint_creates_nothing(
    cli: Cli, kimi: Path
) -> None:
    code, out, _ = cli("reapply", kimi)
    assert code == 0 and "nothing to do" in out and not (kimi / ".patcher").exists()


# --- safe together ------------------------------------------------------------------------


def test_safe_together_on_a_filesystem_without_locks(
    cli: Cli, kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NFS without its lock service answers flock with ENOLCK: the command goes on unlocked
    (every write still compares), says so on stderr, and reverts byte for byte."""
    original = tree_bytes(kimi)

    def no_locks(*_: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(lock.fcntl, "flock", no_locks)
    code, _, err = cli("apply", kimi, "strip-fp8-kv-cache")
    assert code == 0, err
    lock_file = kimi / ".patcher" / "lock"
    assert err.startswith(
        f"warning: {lock_file}: the filesystem refuses file locks (No locks available); going on"
    )
    assert cli("revert", kimi, "--all")[0] == 0
    assert tree_bytes(kimi) == original


def test_clear_refusal_when_locking_fails_otherwise(
    cli: Cli, kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = tree_bytes(kimi)

    def broken(*_: int) -> None:
        raise OSError(errno.EDEADLK, os.strerror(errno.EDEADLK))

    monkeypatch.setattr(lock.fcntl, "flock", broken)
    code, out, err = cli("apply", kimi, "strip-fp8-kv-cache")
    assert code == 1 and "Traceback" not in out + err
    assert err.startswith(f"error: {kimi / '.patcher' / 'lock'}: write failed (Resource deadlock")
    assert tree_bytes(kimi) == original


def test_safe_together_journal_is_compare_and_swapped(
    kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a lock that silently does not hold (NFS, a deleted lock file), a second writer
    between our read and our write of the journal must not lose its entry."""

    @contextlib.contextmanager
    def no_lock(*_args: object, **_kwargs: object) -> Iterator[None]:
        yield

    import patcher.store.change as applying
    import patcher.store.session as session

    monkeypatch.setattr(session, "locked", no_lock)
    real_store = applying.store_object
    raced = []

    def racing_store(*args: Any, **kwargs: Any) -> str:
        if not raced:
            raced.append(True)
            api.apply(kimi, "set-torch-dtype", {"dtype": "float16"})  # the other writer
        return real_store(*args, **kwargs)

    monkeypatch.setattr(applying, "store_object", racing_store)
    with pytest.raises(ConflictError, match="journal changed by another process"):
        api.apply(kimi, "strip-fp8-kv-cache")
    entries = _journal(kimi)["entries"]
    assert [(e["transform"], e["state"]) for e in entries] == [("set-torch-dtype", "applied")]
    config = json.loads((kimi / "config.json").read_text())
    assert "kv_cache_scheme" in config["quantization_config"]  # ours wrote nothing


def _same_size_edit(path: Path) -> bytes:
    """Another writer's edit that keeps the file's size (only bytes can tell it apart)."""
    text = path.read_text().replace('"version": "0.41.0"', '"version": "0.41.9"', 1)
    path.write_text(text)
    return text.encode()


def test_safe_together_file_write_is_compare_and_swapped(
    kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that changes a file between our check and our write (a lock that does not
    hold) keeps its bytes: ours are refused, not written over them."""
    import patcher.store.change as applying

    quant = kimi / "hf_quant_config.json"
    real_store = applying.store_object
    theirs: list[bytes] = []

    def racing_store(*args: Any, **kwargs: Any) -> str:
        if not theirs:
            theirs.append(_same_size_edit(quant))
        return real_store(*args, **kwargs)

    monkeypatch.setattr(applying, "store_object", racing_store)
    with pytest.raises(ConflictError, match="changed by another process while patcher"):
        api.apply(kimi, "strip-fp8-kv-cache")
    assert quant.read_bytes() == theirs[0]
    assert api.status(kimi).applied == ()


def test_apply_recompiles_a_file_changed_while_it_waited_for_the_lock(
    kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hand edit made while apply waited for the lock is kept, and becomes what revert
    gives back."""
    import patcher.ops.adding as applying

    quant = kimi / "hf_quant_config.json"
    real_session = applying.write_session
    edited: list[bytes] = []

    @contextlib.contextmanager
    def late_session(*args: Any, **kwargs: Any) -> Iterator[Any]:
        edited.append(_same_size_edit(quant))
        with real_session(*args, **kwargs) as session:
            yield session

    monkeypatch.setattr(applying, "write_session", late_session)
    api.apply(kimi, "strip-fp8-kv-cache")
    now = json.loads(quant.read_text())
    assert now["producer"]["version"] == "0.41.9"
    assert now["quantization"]["kv_cache_quant_algo"] is None  # the transform's edit
    api.revert(kimi, every=True)
    assert quant.read_bytes() == edited[0]


def test_safe_together_revert_write_is_compare_and_swapped(
    kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import patcher.store.session as session  # every write-ahead step writes through it

    api.apply(kimi, "strip-fp8-kv-cache")
    quant = kimi / "hf_quant_config.json"
    real_replace = session.replace_file
    theirs: list[bytes] = []

    def racing_replace(checkpoint: Any, relative: str, *args: Any, **kwargs: Any) -> None:
        if relative == "hf_quant_config.json" and not theirs:
            theirs.append(_same_size_edit(quant))
        real_replace(checkpoint, relative, *args, **kwargs)

    monkeypatch.setattr(session, "replace_file", racing_replace)
    with pytest.raises(ConflictError, match="changed by another process while patcher"):
        api.revert(kimi, every=True)
    assert quant.read_bytes() == theirs[0]


# --- hand edits survive -------------------------------------------------------------------


def test_recovery_never_overwrites_a_hand_edit(kimi: Path) -> None:
    """A revert killed mid-way, then a hand edit: the next command must not write over it."""
    original = (kimi / "config.json").read_bytes()
    api.apply(kimi, "strip-fp8-kv-cache")
    data = _journal(kimi)
    entry = data["entries"][0]
    record = next(f for f in entry["files"] if f["path"] == "config.json")
    entry["state"] = "reverting"
    entry["targets"] = {"config.json": record["before"]}
    entry["sources"] = {"config.json": record["after"]}
    _write_journal(kimi, data)
    edited = (kimi / "config.json").read_text().replace('"model_type"', '"model_type" ', 1)
    (kimi / "config.json").write_text(edited)
    status = api.status(kimi)  # must not settle by overwriting
    assert (kimi / "config.json").read_text() == edited
    assert {f.path: f.state for f in status.files}["config.json"] == "half-done"
    assert [e.id for e in status.unsettled] == [1]
    with pytest.raises(JournalError, match="changed since it started"):
        api.revert(kimi, every=True)
    assert (kimi / "config.json").read_text() == edited
    (kimi / "config.json").write_bytes(
        api.status(kimi).checkpoint.joinpath("config.json").read_bytes()
    )
    assert sha256(original) == record["before"]


def test_status_never_reports_pristine_with_an_unsettled_entry(cli: Cli, kimi: Path) -> None:
    api.apply(kimi, "strip-fp8-kv-cache")
    data = _journal(kimi)
    data["entries"][0]["state"] = "pending"
    _write_journal(kimi, data)
    (kimi / "config.json").write_text((kimi / "config.json").read_text() + " ")  # neither
    code, out, _ = cli("status", kimi)
    assert code == 0 and "half-done: #1 strip-fp8-kv-cache (interrupted apply)" in out
    assert "applied: none" in out and "HALF-DONE" in out
    code, out, _ = cli("status", kimi, "--json")
    assert [e["id"] for e in json.loads(out)["unsettled"]] == [1]


# --- stored originals ---------------------------------------------------------------------


def test_byte_exact_revert_despite_a_planted_object(kimi: Path) -> None:
    original = (kimi / "config.json").read_bytes()
    objects = kimi / ".patcher" / "objects"
    objects.mkdir(parents=True)
    planted = objects / sha256(original)
    planted.write_bytes(b"x" * len(original))  # right size, wrong bytes
    api.apply(kimi, "strip-fp8-kv-cache")
    assert planted.read_bytes() == original
    api.revert(kimi, every=True)
    assert (kimi / "config.json").read_bytes() == original


def test_private_file_keeps_private_copies(kimi: Path) -> None:
    config = kimi / "config.json"
    config.chmod(0o600)
    digest = sha256(config.read_bytes())
    api.apply(kimi, "strip-fp8-kv-cache")
    assert stat.S_IMODE((kimi / ".patcher" / "objects" / digest).stat().st_mode) == 0o600
    assert stat.S_IMODE((kimi / ".patcher").stat().st_mode) == 0o700
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


# --- never writes through a link ----------------------------------------------------------


@pytest.mark.parametrize("linked", [".patcher", ".patcher/objects"])
def test_never_writes_through_a_symlinked_journal(
    cli: Cli, kimi: Path, tmp_path: Path, linked: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "journal.json").write_text("precious")
    (outside / "lock").write_text("precious")
    if linked == ".patcher/objects":
        (kimi / ".patcher").mkdir()
    (kimi / linked).symlink_to(outside, target_is_directory=True)
    before = tree_bytes(kimi)
    code, _, err = cli("apply", kimi, "strip-fp8-kv-cache")
    assert code == 1 and "is a symlink or not a folder" in err and "Traceback" not in err
    assert sorted(p.name for p in outside.iterdir()) == ["journal.json", "lock"]
    assert (outside / "journal.json").read_text() == "precious"
    assert (outside / "lock").read_text() == "precious"
    assert tree_bytes(kimi) == before
    with pytest.raises(UnsafePathError):
        fsio.ensure_dir(kimi / linked)


# --- clear refusals -----------------------------------------------------------------------


def _one_line(code: int, err: str) -> None:
    assert code == 1, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "unexpected error" not in err


def test_clear_refusal_deep_nesting_and_huge_integers(cli: Cli, tmp_path: Path) -> None:
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "config.json").write_text(
        '{"max_position_embeddings": 5, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    )
    for args in (
        ["apply", deep, "set-context-length", "--set", "length=4"],
        ["check", deep],
        ["kv-budget", deep, "--gpu", "h100", "--weights", "1"],
        ["check", deep, "--engine", "vllm==0.16.0"],
    ):
        code, _, err = cli(*args)
        _one_line(code, err)
        assert "nested too deeply" in err
    big = tmp_path / "big"
    big.mkdir()
    huge = "1" * 5000
    (big / "config.json").write_text('{"a": ' + huge + ', "max_position_embeddings": 5}')
    before = (big / "config.json").read_bytes()
    code, _, err = cli("apply", big, "set-context-length", "--set", "length=4")
    if code == 0:  # the CLI lifts Python's digit limit: the huge integer is kept as written
        assert huge in (big / "config.json").read_text()
        api.revert(big, every=True)
        assert (big / "config.json").read_bytes() == before
    else:
        _one_line(code, err)


def test_clear_refusal_lone_surrogate_in_a_removed_value(tmp_path: Path) -> None:
    text = '{"quantization_config": {"kv_cache_scheme": "\\ud800"}}'
    (tmp_path / "config.json").write_text(text)
    api.apply(tmp_path, "strip-fp8-kv-cache")
    api.revert(tmp_path, every=True)
    assert (tmp_path / "config.json").read_text() == text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["set-architectures", "--set", "architecture=\udcff"], "not valid UTF-8 text"),
        (["set-rope-scaling-yarn", "--set", "factor=1e400"], "expected a finite number"),
        (["set-rope-scaling-yarn", "--set", "factor=nan"], "expected a finite number"),
        (["set-context-length", "--set", "length=٣٢٧٦٨"], "expected an integer such as"),
        (
            ["set-generation-defaults", "--set", 'values={"temperature": NaN}'],
            "NaN is not JSON",
        ),
        (["set-chat-template", "--set", "template=/dev/zero"], "is not a regular file"),
    ],
)
def test_clear_refusal_bad_parameters(cli: Cli, kimi: Path, args: list[str], message: str) -> None:
    before = tree_bytes(kimi)
    code, _, err = cli("apply", kimi, *args)
    _one_line(code, err)
    assert message in err and tree_bytes(kimi) == before


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("when = 1979-05-27T07:32:00Z\n", "TOML dates and times are not JSON values"),
        ("", "'remove' cannot take the whole document"),
        ('[params.n]\ntype = "int"\nhelp = "n"\nmin = "1"\n', "expected a number"),
        ('[params.n]\ntype = "int"\nhelp = "n"\ndefault = "x"\n', "cannot default to 'x'"),
    ],
)
def test_clear_refusal_bad_transform_files(
    cli: Cli, kimi: Path, tmp_path: Path, body: str, message: str
) -> None:
    ops = '[{ op = "remove", path = "" }]' if not body else '[{ op = "remove", path = "/a" }]'
    text = (
        'name = "t"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n'
        + body
        + f'\n[[edits]]\nfile = "config.json"\nops = {ops}\n'
    )
    path = tmp_path / "t.toml"
    path.write_text(text)
    code, _, err = cli("apply", kimi, path)
    _one_line(code, err)
    assert message in err


def test_clear_refusal_transform_named_like_an_entry(cli: Cli, kimi: Path, tmp_path: Path) -> None:
    path = tmp_path / "one.toml"
    path.write_text(
        'name = "1"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n'
        '[[edits]]\nfile = "config.json"\nops = [{ op = "remove", path = "/a" }]\n'
    )
    code, _, err = cli("apply", kimi, path)
    _one_line(code, err)
    assert "starting with a letter" in err


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_clear_refusal_journalled_file_replaced(cli: Cli, kimi: Path, kind: str) -> None:
    api.apply(kimi, "strip-fp8-kv-cache")
    (kimi / "config.json").unlink()
    if kind == "folder":
        (kimi / "config.json").mkdir()
    else:
        os.mkfifo(kimi / "config.json")
    code, _, err = cli("status", kimi)  # a FIFO must not hang it
    _one_line(code, err)
    assert "is not a regular file" in err


@pytest.mark.parametrize(
    "change",
    [
        lambda e: e.update(files="abc"),
        lambda e: e["files"][0].update(forward="abc"),
        lambda e: e.update(id="1"),
        lambda e: e["files"][0].update(before=5),
        lambda e: e.update(params=[1]),
    ],
)
def test_clear_refusal_journal_fields_of_wrong_type(cli: Cli, kimi: Path, change: Any) -> None:
    api.apply(kimi, "strip-fp8-kv-cache")
    data = _journal(kimi)
    change(data["entries"][0])
    _write_journal(kimi, data)
    for args in (["status", kimi], ["revert", kimi, "--all"], ["diff", kimi]):
        code, _, err = cli(*args)
        _one_line(code, err)
        assert "journal is damaged" in err


def test_clear_refusal_full_stdout(kimi: Path) -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT

    with Path("/dev/full").open("w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "patcher", "status", str(kimi)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    assert done.returncode == 1 and "cannot write the output" in done.stderr
    assert "Traceback" not in done.stderr


def test_lock_timeout_ignores_nonsense(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("nan", "inf", "-3"):
        monkeypatch.setenv("PATCHER_LOCK_TIMEOUT", value)
        assert lock.lock_timeout() == lock.DEFAULT_TIMEOUT_S


def test_overrides_do_not_alias_between_entries(cli: Cli, kimi: Path) -> None:
    cli("apply", kimi, "set-context-length", "--set", "length=131072")
    cli("apply", kimi, "set-context-length", "--set", "length=65536", "--stack")
    code, out, _ = cli("overrides", kimi, "--json")
    result = json.loads(out)
    first, second = result["entries"]
    assert first["hf_overrides"] == {"text_config": {"max_position_embeddings": 131072}}
    assert second["hf_overrides"] == {"text_config": {"max_position_embeddings": 65536}}
    assert result["hf_overrides"] == {"text_config": {"max_position_embeddings": 65536}}


def test_stale_temp_files_are_removed(kimi: Path) -> None:
    api.apply(kimi, "strip-fp8-kv-cache")
    stale = kimi / ".config.json.deadbeef.patcher-tmp"
    stale.write_text("half")
    (kimi / ".patcher" / "objects" / ".x.0000.patcher-tmp").write_text("half")
    api.status(kimi)
    assert not stale.exists()
    assert not list((kimi / ".patcher" / "objects").glob("*.patcher-tmp"))
    assert journal.load_journal(kimi / ".patcher").applied


def test_hand_edit_survives_a_forced_revert_and_the_next_one(cli: Cli, kimi: Path) -> None:
    """strip + set-context-length, hand edit of the length, forced revert of strip: the
    hand edit must stay visible, and reverting set-context-length must not drop it silently."""
    cli("apply", kimi, "strip-fp8-kv-cache")
    cli("apply", kimi, "set-context-length", "--set", "length=131072")
    config = kimi / "config.json"
    config.write_text(config.read_text().replace("131072", "100000", 1))
    code, _, err = cli("revert", kimi, "strip-fp8-kv-cache")
    assert code == 1
    assert "at /text_config/max_position_embeddings (JSON pointer)" in err
    assert '"max_position_embeddings": 131072' in err  # the "as patcher left it" side
    code, _, err = cli("revert", kimi, "strip-fp8-kv-cache", "--force")
    assert code == 0, err
    assert "100000" in config.read_text() and "kv_cache_scheme" in config.read_text()
    states = {f.path: f.state for f in api.status(kimi).files}
    assert states["config.json"] == "changed"
    code, _, err = cli("revert", kimi, "set-context-length")
    assert code == 1 and "edited by hand" in err
    assert "100000" in config.read_text()


def test_never_writes_through_a_folder_swapped_for_a_link(kimi: Path, tmp_path: Path) -> None:
    """The path is checked, then (race) a folder on it becomes a symlink to outside: the write
    goes through no link."""
    from patcher.store.checkpoint import open_checkpoint
    from patcher.store.files import replace_file

    sub = kimi / "sub"
    sub.mkdir()
    (sub / "config.json").write_text("{}")
    ckpt = open_checkpoint(kimi)
    path = ckpt.path("sub/config.json")  # checked now
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text("precious")
    shutil.rmtree(sub)
    sub.symlink_to(outside, target_is_directory=True)  # swapped after the check
    with pytest.raises(UnsafePathError, match="symlink"):
        replace_file(ckpt, "sub/config.json", b"{}", expect=None)
    assert (outside / "config.json").read_text() == "precious"
    assert path.parent.is_symlink()


def test_minimal_edits_crlf_file_gets_crlf_members(tmp_path: Path) -> None:
    text = '{\r\n    "max_position_embeddings": 5,\r\n    "x": {}\r\n}\r\n'
    (tmp_path / "config.json").write_bytes(text.encode())
    api.apply(tmp_path, "set-rope-scaling-yarn", {"factor": 4.0, "original": 4})
    patched = (tmp_path / "config.json").read_bytes()
    assert b"rope_scaling" in patched and b"\n" not in patched.replace(b"\r\n", b"")
    api.revert(tmp_path, every=True)
    assert (tmp_path / "config.json").read_bytes() == text.encode()


def test_forged_overlay_source_is_not_trusted(cli: Cli, kimi: Path, tmp_path: Path) -> None:
    """A .patcher/overlay.json naming another folder must not make links into it allowed."""
    private = tmp_path / "private"
    private.mkdir()
    (private / "config.json").write_text('{"secret": 1, "max_position_embeddings": 7}')
    (private / "config.json").chmod(0o600)
    overlay = tmp_path / "overlay"
    code, _, err = cli("apply", kimi, "strip-fp8-kv-cache", "--overlay", overlay)
    assert code == 0, err
    (overlay / ".patcher" / "overlay.json").write_text(json.dumps({"source": str(private)}))
    (overlay / "generation_config.json").symlink_to(private / "config.json")
    code, _, err = cli("apply", overlay, "fix-generation-eos-token-id", "--set", "eos=[1]")
    assert code == 1 and "overlay link leads to" in err and "Traceback" not in err
    assert not any(
        (p.read_bytes() == (private / "config.json").read_bytes())
        for p in (overlay / ".patcher" / "objects").iterdir()
    )
    (overlay / ".patcher" / "overlay.json").write_text(json.dumps({"source": "/etc"}))
    code, _, err = cli("status", overlay)
    assert code == 1 and "its source is not a checkpoint" in err
    # The former sources of a moved store are a list of paths, or the record is damaged.
    for moves in ("/etc", [1], {"a": "b"}):
        record = {"source": str(kimi), "moved_from": moves}
        (overlay / ".patcher" / "overlay.json").write_text(json.dumps(record))
        code, _, err = cli("status", overlay)
        assert code == 1 and "overlay record is damaged" in err, moves


@pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")
def test_root_keeps_the_users_ownership(kimi: Path) -> None:
    config = kimi / "config.json"
    os.chown(config, 4321, 4321)
    api.apply(kimi, "strip-fp8-kv-cache")
    assert (config.stat().st_uid, config.stat().st_gid) == (4321, 4321)
    api.revert(kimi, every=True)
    assert (config.stat().st_uid, config.stat().st_gid) == (4321, 4321)


def _as_user(uid: int, cli: Cli, *args: str | Path) -> tuple[int, str]:
    """Run the CLI in a forked child that has dropped root for ``uid``: exit code, stderr.
    Every patcher module is imported first: the child may not be allowed to read the source
    tree (CI clones into a private temp folder)."""
    import importlib
    import pkgutil

    import patcher

    for module in pkgutil.walk_packages(patcher.__path__, "patcher."):
        importlib.import_module(module.name)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        code, err = 99, "child failed"
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            code, _, err = cli(*args)
        finally:
            os.write(write_end, json.dumps([code, err]).encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        code, err = json.loads(pipe.read())
    os.waitpid(pid, 0)
    return code, err


@pytest.fixture
def users_checkpoint() -> Iterator[Path]:
    """The example checkpoint owned by uid 4321, in a folder that uid can reach (pytest's own
    temp root is private to root)."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="patcher-owner-"))
    base.chmod(0o755)
    ckpt = base / "kimi"
    shutil.copytree(ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4", ckpt)
    for path in [ckpt, *ckpt.iterdir()]:
        os.chown(path, 4321, 4321)
    yield ckpt
    shutil.rmtree(base)


@pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")
def test_a_journal_made_by_root_belongs_to_the_checkpoints_owner(
    users_checkpoint: Path, cli: Cli
) -> None:
    """Provisioned as root (Ansible's become), served as the owner: the owner can still undo."""
    ckpt = users_checkpoint
    before = tree_bytes(ckpt)
    assert cli("apply", ckpt, "strip-fp8-kv-cache")[0] == 0
    made = [ckpt / ".patcher", *(ckpt / ".patcher").rglob("*")]
    assert len(made) >= 4  # the folder, journal.json, lock, objects/ and its files
    assert {(p.lstat().st_uid, p.lstat().st_gid) for p in made} == {(4321, 4321)}
    cli("revert", ckpt, "--all", "--dry-run")  # loads what revert needs while root can read it
    code, err = _as_user(4321, cli, "revert", ckpt, "--all")
    assert code == 0, err
    assert tree_bytes(ckpt) == before


@pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")
def test_a_journal_another_user_owns_is_refused_with_the_chown_to_run(
    users_checkpoint: Path, cli: Cli
) -> None:
    """A .patcher/ left root's (an older patcher run as root): one line naming the owner and
    the command that hands it over, nothing changed."""
    ckpt = users_checkpoint
    assert cli("apply", ckpt, "strip-fp8-kv-cache")[0] == 0
    for path in [ckpt / ".patcher", *(ckpt / ".patcher").rglob("*")]:
        os.chown(path, 0, 0)
    before = tree_bytes(ckpt)
    cli("revert", ckpt, "--all", "--dry-run")
    code, err = _as_user(4321, cli, "revert", ckpt, "--all")
    assert code == 1 and "Traceback" not in err
    message = err.splitlines()[0]
    hint = "next: run the command as root, or take the folder over: " + (
        f"sudo chown -R 4321 {ckpt}/.patcher"
    )
    assert message == (
        f"error: {ckpt}/.patcher/lock: cannot write here (Permission denied; {ckpt}/.patcher "
        f"belongs to root); {hint}"
    )
    os.chown(ckpt / ".patcher", 4321, 4321)  # the folder handed over, the lock still root's
    message = _as_user(4321, cli, "revert", ckpt, "--all")[1].splitlines()[0]
    assert message == (
        f"error: {ckpt}/.patcher/lock: cannot write here (Permission denied; {ckpt}/.patcher/lock "
        f"belongs to root); {hint}"
    )
    assert tree_bytes(ckpt) == before


def test_byte_exact_revert_gives_back_the_original_mtime(kimi: Path) -> None:
    config = kimi / "config.json"
    os.utime(config, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    api.apply(kimi, "strip-fp8-kv-cache")
    assert config.stat().st_mtime_ns != 1_600_000_000_000_000_000
    api.revert(kimi, every=True)
    assert config.stat().st_mtime_ns == 1_600_000_000_000_000_000


def test_status_does_not_read_a_file_whose_size_rules_it_out(
    kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.apply(kimi, "strip-fp8-kv-cache")
    with (kimi / "config.json").open("ab") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: a huge replacement
    import patcher.store.file_status as status_module

    read: list[int] = []
    real = status_module.file_sha256
    monkeypatch.setattr(status_module, "file_sha256", lambda fd: read.append(fd) or real(fd))
    states = {f.path: f.state for f in api.status(kimi).files}
    # hf_quant_config.json is hashed (its size is a recorded one); config.json is not.
    assert states["config.json"] == "changed" and len(read) == 1


def test_clear_refusal_full_disk_at_the_lock(kimi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC while writing who holds the lock: the holder note is a courtesy, not a crash."""

    def full(*_args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    assert api.apply(kimi, "strip-fp8-kv-cache").outcome == "applied"


def test_permission_error_on_the_journal_is_not_called_damage(
    cli: Cli, kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.apply(kimi, "strip-fp8-kv-cache")
    real = fsio.read_regular

    def denied(path: Path, limit: int | None = None) -> bytes:
        if path.name == "journal.json":
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(path, limit)

    monkeypatch.setattr(journal, "read_regular", denied)
    code, _, err = cli("status", kimi)
    _one_line(code, err)
    assert "cannot read the journal (Permission denied)" in err and "damaged" not in err


def _patcher(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process, so that a hang fails the test instead of stopping the run."""
    return subprocess.run(
        [sys.executable, "-m", "patcher", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_clear_refusal_a_journal_that_is_a_pipe(kimi: Path) -> None:
    """A named pipe as journal.json, or as a stored original, used to hang every command."""
    (kimi / ".patcher").mkdir()
    os.mkfifo(kimi / ".patcher" / "journal.json")
    done = _patcher("status", kimi)
    assert done.returncode == 1
    assert "journal.json: journal is damaged (not a regular file)" in done.stderr


@pytest.mark.parametrize("damage", ["deleted", "pipe"])
def test_a_lost_original_is_undone_with_the_inverse_patch_under_force(
    kimi: Path, damage: str
) -> None:
    """With the stored originals gone (or named pipes, which used to hang the command), revert
    refuses and names --force; --force then undoes with the inverse patches. It used to refuse
    again with the same advice."""
    original = tree_bytes(kimi)
    assert _patcher("apply", kimi, "strip-fp8-kv-cache").returncode == 0
    patched = tree_bytes(kimi)
    for stored in (kimi / ".patcher" / "objects").iterdir():
        stored.unlink()
        if damage == "pipe":
            os.mkfifo(stored)
    done = _patcher("revert", kimi, "--all")
    assert done.returncode == 1 and "original bytes are missing" in done.stderr
    assert "'patcher revert --force'" in done.stderr and tree_bytes(kimi) == patched
    done = _patcher("revert", kimi, "--all", "--force")
    assert done.returncode == 0, done.stderr
    assert "inverse patch applied where it still matched (--force)" in done.stdout
    now = tree_bytes(kimi)
    for name in ("config.json", "hf_quant_config.json"):
        assert json.loads(now[name]) == json.loads(original[name]), name
    assert _patcher("status", kimi).stdout.splitlines()[1] == "applied: none"


def test_byte_exact_revert_despite_planted_pipes(kimi: Path) -> None:
    """Pipes planted where the originals will be stored are replaced, not waited on."""
    original = tree_bytes(kimi)
    objects = kimi / ".patcher" / "objects"
    objects.mkdir(parents=True)
    for name in ("config.json", "hf_quant_config.json"):
        os.mkfifo(objects / fsio.sha256((kimi / name).read_bytes()))
    assert _patcher("apply", kimi, "strip-fp8-kv-cache").returncode == 0
    assert _patcher("revert", kimi, "--all").returncode == 0
    assert tree_bytes(kimi) == original


# --- this round's findings (issue 28) -----------------------------------------------------

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _hf_cache(tmp_path: Path, source: Path) -> tuple[Path, Path]:
    """A Hugging Face cache holding ``source`` as models--org--name at COMMIT (refs/main):
    the snapshot's files are relative links into blobs/. Returns (cache, snapshot)."""
    cache = tmp_path / "hub"
    folder = cache / "models--org--name"
    snapshot = folder / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (folder / "blobs").mkdir()
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(COMMIT)
    for path in sorted(source.iterdir()):
        if path.is_file() and not path.name.endswith(".safetensors"):
            blob = folder / "blobs" / sha256(path.read_bytes())
            blob.write_bytes(path.read_bytes())
            (snapshot / path.name).symlink_to(Path("..", "..", "blobs", blob.name))
    return cache, snapshot


@pytest.mark.parametrize("target", [".patcher/journal.json", "./.patcher/journal.json"])
def test_never_writes_outside_a_transforms_own_files_journal_is_no_target(
    kimi: Path, tmp_path: Path, cli: Cli, target: str
) -> None:
    """A transform file that names patcher's own journal is refused at once: nothing under
    .patcher/ is ever a transform's target, and the earlier entry can still be reverted."""
    api.apply(kimi, "strip-fp8-kv-cache")
    before = (kimi / ".patcher" / "journal.json").read_bytes()
    spec = tmp_path / "t-j.toml"
    spec.write_text(
        'name = "t-j"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n'
        f'[[edits]]\nfile = "{target}"\n'
        'ops = [{ op = "replace", path = "/format", value = 2 }]\n'
    )
    code, _, err = cli("apply", kimi, str(spec))
    assert code == 1 and ".patcher/" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert (kimi / ".patcher" / "journal.json").read_bytes() == before
    assert cli("revert", kimi, "--all")[0] == 0


def test_never_reads_outside_blobs_linked_elsewhere_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache whose blobs/ is a link (to /) does not make every link trusted: a snapshot
    file linked to a file outside the checkpoint is refused, and nothing is kept of it."""
    cache, snapshot = _hf_cache(tmp_path, CONFIGS / "kimi-k2.5-nvfp4")
    blobs = snapshot.parent.parent / "blobs"
    secret = tmp_path / "secret.json"
    secret.write_text('{"architectures": ["X"], "torch_dtype": "secret"}')
    shutil.rmtree(blobs)
    blobs.symlink_to("/")
    (snapshot / "config.json").unlink()
    (snapshot / "config.json").symlink_to(Path("..", "..", "blobs", *secret.parts[1:]))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    with pytest.raises(UnsafePathError, match="outside the checkpoint"):
        api.apply("org/name", "set-torch-dtype", {"dtype": "bfloat16"})
    kept = snapshot / ".patcher" / "objects"
    assert not kept.exists() or not any(
        p.read_bytes() == secret.read_bytes() for p in kept.iterdir()
    )


@pytest.mark.parametrize("ref", ["../../../victim", "/abs/path", "fifo", "link", "not-a-commit"])
def test_never_reads_outside_refs_are_validated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ref: str
) -> None:
    """refs/main must be a regular file of the cache holding a commit id: a path, a pipe, a
    link or junk is refused in one line, and nothing outside the cache is opened."""
    cache, _ = _hf_cache(tmp_path, CONFIGS / "kimi-k2.5-nvfp4")
    victim = tmp_path / "victim"
    shutil.copytree(CONFIGS / "kimi-k2.5-nvfp4", victim)
    main = cache / "models--org--name" / "refs" / "main"
    main.unlink()
    if ref == "fifo":
        os.mkfifo(main)
    elif ref == "link":
        main.symlink_to(tmp_path / "secret")
        (tmp_path / "secret").write_text("s3cr3t-token")
    else:
        main.write_text(ref)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    with pytest.raises(Exception) as raised:
        api.status("org/name")
    assert isinstance(raised.value, api.CheckpointError), raised.value
    assert "s3cr3t" not in str(raised.value)
    assert not (victim / ".patcher").exists()


def test_never_writes_through_a_link_the_journal_invents(kimi: Path) -> None:
    """A journal record that claims a regular file was a link (to /etc/passwd, or ../x) does
    not make revert plant that link: it refuses, naming the journal, and the file stays."""
    api.apply(kimi, "strip-fp8-kv-cache")
    for link in ("/etc/passwd", "../outside/passwd"):
        data = _journal(kimi)
        for record in data["entries"][0]["files"]:
            record["link"] = link
        _write_journal(kimi, data)
        before = tree_bytes(kimi)
        with pytest.raises(UnsafePathError, match="journal records a link"):
            api.revert(kimi, every=True)
        assert tree_bytes(kimi) == before
        assert not (kimi / "hf_quant_config.json").is_symlink()


def test_clear_refusals_nan_is_refused_not_a_crash(tmp_path: Path, cli: Cli) -> None:
    """A config holding NaN at the edited member is refused in one line (exit 1, not 3)."""
    (tmp_path / "config.json").write_text('{"architectures": ["X"], "torch_dtype": NaN}\n')
    before = tree_bytes(tmp_path)
    code, _, err = cli("apply", tmp_path, "set-torch-dtype", "--set", "dtype=bfloat16")
    assert code == 1, err
    assert "/torch_dtype" in err and "NaN" in err
    assert tree_bytes(tmp_path) == before


@pytest.mark.parametrize(
    "damage",
    [
        {"upstream": "x"},
        {"upstream": {"repo": 1}},
        {"format": 0},
        {"format": True},
        {"duplicate": True},
    ],
)
def test_clear_refusals_a_damaged_journal_is_named(
    kimi: Path, cli: Cli, damage: dict[str, Any]
) -> None:
    """A journal with a bad upstream, format or duplicate ids is refused as damaged (exit 1),
    never an unexpected error, and nothing is changed."""
    api.apply(kimi, "strip-fp8-kv-cache")
    data = _journal(kimi)
    if damage.pop("duplicate", False):
        data["entries"].append(dict(data["entries"][0]))
    data.update(damage)
    _write_journal(kimi, data)
    before = tree_bytes(kimi)
    code, _, err = cli("status", kimi)
    assert code == 1 and "journal is damaged" in err, err
    assert tree_bytes(kimi) == before


def test_clear_refusals_a_huge_journal_is_not_read_into_memory(kimi: Path, cli: Cli) -> None:
    """A 3 GB sparse journal.json is refused by its size before it is read."""
    api.apply(kimi, "strip-fp8-kv-cache")
    with (kimi / ".patcher" / "journal.json").open("r+b") as handle:
        handle.truncate(3 * 2**30)
    code, _, err = cli("status", kimi)
    assert code == 1 and "larger than" in err, err


def test_doctor_is_linear_on_one_long_line(tmp_path: Path) -> None:
    """A megabyte-long line of a repeated error prefix (quadratic for the patterns when
    whole) and a 64 MiB line without a newline cost bounded time and memory; the real error
    on the next line is still found."""
    from patcher.advice import doctor, log_lines

    prefix = "ERROR ValueError: Missing required keys in 'rope_scaling' for 'rope_type'='yarn': {"
    log = tmp_path / "long.log"
    real = (
        "ValueError: To serve at least one request with the model's max seq len (262144), (2.0 GiB "
        "KV cache is needed, which is larger than the available KV cache memory (1.0 GiB)."
    )
    with log.open("w") as out:
        out.write(prefix * 13_000 + "\n")
        out.write("Model architectures [" * 3_000_000 + "\n")
        out.write(real + "\n")
    import time

    started = time.perf_counter()
    found = doctor.diagnose(log)
    assert time.perf_counter() - started < 5  # 104 s for the first line alone, uncut
    assert found.recognised and found.error is not None and "262144" in found.error
    assert list(log_lines.bounded(iter(["x" * 10_000]))) == ["x" * log_lines.LINE_LIMIT]


def test_clear_refusals_enospc_on_the_last_fsync_never_says_nothing_changed(
    kimi: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal's last write fails after the files were written (ENOSPC at the last
    fsync): the message must not say "nothing was changed"; it says how to find out, and the
    next command finds the journal and the files in agreement."""
    real = os.fsync
    calls = 0

    def counting(fd: int) -> None:
        nonlocal calls
        calls += 1
        real(fd)

    probe = tmp_path / "probe"
    shutil.copytree(kimi, probe)
    monkeypatch.setattr(os, "fsync", counting)
    api.apply(probe, "strip-fp8-kv-cache")
    last, calls = calls, 0

    def failing(fd: int) -> None:
        nonlocal calls
        calls += 1
        if calls == last:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(WriteError) as raised:
        api.apply(kimi, "strip-fp8-kv-cache")
    assert "nothing was changed" not in str(raised.value)
    assert "patcher status" in str(raised.value)
    monkeypatch.setattr(os, "fsync", real)
    status = api.status(kimi)
    assert {f.state for f in status.files} <= {"patched", "reverted"}
    assert api.revert(kimi, every=True).outcome in ("reverted", "nothing-to-do")


@pytest.mark.parametrize(
    ("profile", "pointer"),
    [
        ('engine = "vllm==0.16.0"\ngpu = "h200"\ntensor_parallel = 99999999999999999999\n', "tp"),
        ('engine = "vllm==0.16.0.0.0.0"\ngpu = "h200"\n', "engine"),
        ('engine = "trtllm==1.0"\ngpu = "h200"\n', "engine"),
    ],
)
def test_clear_refusals_profile_values_are_bounded(
    kimi: Path, tmp_path: Path, cli: Cli, profile: str, pointer: str
) -> None:
    """A profile's absurd tensor-parallel size or malformed engine is refused in one line
    naming what is wrong (an engine patcher does not model is named as such)."""
    path = tmp_path / "p.toml"
    path.write_text(profile)
    code, _, err = cli("plan", kimi, "--profile", path)
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert ("tensor_parallel" in err) if pointer == "tp" else ("engine" in err)
    if "trtllm" in profile:
        assert "not in the engine model" in err


def test_clear_refusals_a_move_into_its_own_child(kimi: Path, tmp_path: Path, cli: Cli) -> None:
    spec = tmp_path / "m.toml"
    spec.write_text(
        'name = "m"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n[[edits]]\nfile = "config.json"\n'
        'ops = [{ op = "move", from = "/quantization_config", path = "/quantization_config/x" }]\n'
    )
    before = tree_bytes(kimi)
    code, _, err = cli("apply", kimi, spec)
    assert code == 1 and "into itself" in err, err
    assert tree_bytes(kimi) == before
