"""Promise 7: every bad input gets one line naming the file, the pointer and what to run next;
exit code 1; no traceback; no byte changed on disk."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from patcher.store import fsio
from tests.conftest import ROOT, Cli, build_tree, tree_bytes


def everything(root: Path) -> dict[str, bytes | str]:
    """All bytes under root, the journal included."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.name != "lock":
            found[path.relative_to(root).as_posix()] = path.read_bytes()
    return found


def refused(cli: Cli, root: Path | None, *args: str | Path) -> str:
    """Run the CLI, check it refused cleanly without touching ``root``, return the message."""
    before = everything(root) if root is not None and root.is_dir() else None
    code, out, err = cli(*args)
    assert code == 1, (code, out, err)
    assert "Traceback" not in out + err
    message = err.splitlines()[0]
    assert message.startswith("error: ")
    assert "next: " in message
    if before is not None:
        assert root is not None and everything(root) == before
    return message


def user_transform(tmp_path: Path, body: str, name: str = "fix.toml") -> Path:
    path = tmp_path / name
    path.write_text(
        'name = "my-fix"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n' + body, encoding="utf-8"
    )
    return path


def test_missing_directory(cli: Cli, tmp_path: Path) -> None:
    message = refused(cli, None, "apply", tmp_path / "nope", "strip-fp8-kv-cache")
    assert str(tmp_path / "nope") in message and "does not exist" in message


def test_directory_without_config_files(cli: Cli, tmp_path: Path) -> None:
    build_tree(tmp_path, {"model.safetensors": b"\0" * 8})
    message = refused(cli, tmp_path, "status", tmp_path)
    assert "no config files" in message


def test_invalid_json_gives_line_and_column(cli: Cli, tmp_path: Path) -> None:
    build_tree(tmp_path, {"config.json": '{\n  "a": 1,\n  "b" 2\n}\n'})
    message = refused(cli, tmp_path, "apply", tmp_path, "strip-fp8-kv-cache")
    assert "config.json" in message and "line 3 column 7" in message


def test_overrides_of_a_config_it_cannot_read_is_refused(cli: Cli, kimi: Path) -> None:
    """Whether the flags nest under text_config follows config.json: a broken one used to be
    taken for a flat config, printing --hf-overrides the multimodal engine would not apply."""
    cli("apply", kimi, "set-context-length", "--set", "length=131072")
    (kimi / "config.json").write_text('{"text_config": {"max_position_embeddings": 1,}}')
    message = refused(cli, kimi, "overrides", kimi)
    assert message.startswith(f"error: {kimi}/config.json: not valid JSON (")
    assert message.endswith("next: fix the file, then run the command again")


def test_not_utf8(cli: Cli, tmp_path: Path) -> None:
    build_tree(tmp_path, {"config.json": b'{"a": "\xff"}'})
    message = refused(cli, tmp_path, "apply", tmp_path, "strip-fp8-kv-cache")
    assert "config.json" in message and "not UTF-8" in message and "byte 7" in message


def test_duplicate_key_in_touched_object(cli: Cli, tmp_path: Path) -> None:
    build_tree(
        tmp_path,
        {"config.json": '{"quantization_config": {"kv_cache_scheme": 1, "kv_cache_scheme": 2}}'},
    )
    message = refused(cli, tmp_path, "apply", tmp_path, "strip-fp8-kv-cache")
    assert f"{tmp_path}/config.json at /quantization_config" in message
    assert "duplicate key 'kv_cache_scheme'" in message


def test_unknown_transform_suggests_closest(cli: Cli, kimi: Path) -> None:
    message = refused(cli, kimi, "apply", kimi, "strip-fp8-kv-cach")
    assert "did you mean 'strip-fp8-kv-cache'" in message
    assert "next: patcher show strip-fp8-kv-cache" in message
    # A typo at the start of a long name is nearer to it than to a short name of that length
    # (whole-name closeness alone offered strip-bom for strip-fp9).
    for typed, meant in (
        ("strip-fp9", "strip-fp8-kv-cache"),
        ("strip-bmo", "strip-bom"),
        ("context-length", "set-context-length"),
    ):
        assert f"did you mean {meant!r}" in refused(cli, kimi, "apply", kimi, typed)


PARAM_BODY = """
[params.length]
type = "int"
help = "context length"
min = 1

[[edits]]
file = "config.json"
ops = [{ op = "set", path = "/max_position_embeddings", value = "{{length}}" }]
"""


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((), "parameter 'length': missing (use --set length=...)"),
        (
            ("--set", "length=abc"),
            "parameter 'length': expected an integer such as 131072, got 'abc'",
        ),
        (("--set", "length=0"), "parameter 'length': must be at least 1, got 0"),
        (
            ("--set", "lenght=5"),
            "unknown parameter 'lenght' (known: length); did you mean 'length'?",
        ),
        (("--set", "length"), "--set expects KEY=VALUE"),
        (
            ("--set", "length=4096", "--set", "length=8192"),
            "--set length= given twice ('4096' and '8192'); next: give --set length=... once",
        ),
    ],
)
def test_bad_parameters(
    cli: Cli, kimi: Path, tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    fix = user_transform(tmp_path, PARAM_BODY)
    message = refused(cli, kimi, "apply", kimi, fix, *args)
    assert needle in message


@pytest.mark.parametrize(
    ("transform", "assignment"),
    [
        ("set-tokenizer-eos-token", "token="),
        ("set-architectures", "architecture= "),
        ("add-quant-exclude-modules", "pattern="),
    ],
)
def test_an_empty_text_parameter_is_refused(
    cli: Cli, model_checkpoint: object, transform: str, assignment: str
) -> None:
    root = model_checkpoint("llama-3.1-8b-instruct-bnb8bit")  # type: ignore[operator]
    name = assignment.partition("=")[0]
    message = refused(cli, root, "apply", root, transform, "--set", assignment)
    assert f"{transform}: parameter {name!r}: expected text, got " in message
    assert f"next: patcher show {transform}" in message


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("edits = [", "invalid TOML"),
        ("", "at /edits (JSON pointer): expected at least one [[edits]] table"),
        (
            '[[edits]]\nfile = "config.json"\nops = [{ op = "frobnicate", path = "/a" }]\n',
            "at /edits/0/ops/0/op (JSON pointer): unknown op 'frobnicate'",
        ),
        (
            '[[edits]]\nfile = "config.json"\nops = [{ op = "remove", path = "a" }]\n',
            "at /edits/0/ops/0/path (JSON pointer): expected a JSON pointer",
        ),
    ],
)
def test_invalid_transform_file(
    cli: Cli, kimi: Path, tmp_path: Path, body: str, needle: str
) -> None:
    fix = user_transform(tmp_path, body)
    message = refused(cli, kimi, "apply", kimi, fix)
    assert str(fix) in message and needle in message


@pytest.mark.parametrize(
    ("target", "needle"),
    [("../outside.json", "'..' is not allowed"), ("/etc/hostname", "absolute path")],
)
def test_transform_naming_a_path_outside(
    cli: Cli, kimi: Path, tmp_path: Path, target: str, needle: str
) -> None:
    fix = user_transform(
        tmp_path, f'[[edits]]\nfile = "{target}"\nops = [{{ op = "remove", path = "/a" }}]\n'
    )
    assert needle in refused(cli, kimi, "apply", kimi, fix)


@pytest.mark.parametrize(
    "weights", ["model-00001-of-00002.safetensors", "sub/pytorch_model.bin", "Model.GGUF"]
)
def test_transform_naming_a_weight_file(cli: Cli, kimi: Path, tmp_path: Path, weights: str) -> None:
    fix = user_transform(
        tmp_path, f'[[edits]]\nfile = "{weights}"\nops = [{{ op = "remove", path = "/a" }}]\n'
    )
    message = refused(cli, kimi, "apply", kimi, fix)
    assert f"{fix} at /edits/0/file (JSON pointer): {weights}: is a weight file" in message


def test_journal_entry_naming_a_weight_file_is_refused(cli: Cli, kimi: Path) -> None:
    cli("apply", kimi, "strip-fp8-kv-cache")
    journal = kimi / ".patcher" / "journal.json"
    data = json.loads(journal.read_text())
    data["entries"][0]["files"][0]["path"] = "model-00001-of-00001.safetensors"
    journal.write_text(json.dumps(data))
    message = refused(cli, kimi, "revert", kimi, "--all")
    assert "journal is damaged" in message
    assert "'model-00001-of-00001.safetensors': is a weight file" in message


def test_symlink_leading_outside(cli: Cli, kimi: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    build_tree(outside, {"gen.json": '{"a": 1}'})
    (kimi / "generation_config.json").symlink_to(outside / "gen.json")
    (kimi / "sub").symlink_to(outside)
    for target in ("generation_config.json", "sub/gen.json"):
        fix = user_transform(
            tmp_path, f'[[edits]]\nfile = "{target}"\nops = [{{ op = "remove", path = "/a" }}]\n'
        )
        message = refused(cli, kimi, "apply", kimi, fix)
        assert "symlink" in message
    assert (outside / "gen.json").read_text() == '{"a": 1}'


@pytest.fixture
def read_only(monkeypatch: pytest.MonkeyPatch, kimi: Path) -> Iterator[Path]:
    """Make writes under the checkpoint fail with EROFS (root ignores chmod, so simulate)."""
    real_open, real_mkdir = os.open, os.mkdir

    def guarded_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).startswith(str(kimi)) and flags & (os.O_WRONLY | os.O_RDWR):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)

    def guarded_mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if str(path).startswith(str(kimi)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_open)
    monkeypatch.setattr(os, "mkdir", guarded_mkdir)
    yield kimi


def test_read_only_directory(cli: Cli, read_only: Path) -> None:
    message = refused(cli, read_only, "apply", read_only, "strip-fp8-kv-cache")
    assert "cannot write here (Read-only file system)" in message
    assert "--overlay" in message


def test_full_disk_mid_write_changes_nothing(
    cli: Cli, kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli("apply", kimi, "strip-fp8-kv-cache", "--dry-run")
    real_write = fsio._write_all
    config_writes = []

    def filling_up(fd: int, data: bytes) -> None:
        target = str(Path(f"/proc/self/fd/{fd}").readlink())
        if "config.json" in target and "/.patcher/" not in target:
            config_writes.append(target)
            if len(config_writes) == 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_write(fd, data)

    monkeypatch.setattr(fsio, "_write_all", filling_up)
    before = tree_bytes(kimi)
    code, _, err = cli("apply", kimi, "strip-fp8-kv-cache")
    assert code == 1 and "no space left on the device" in err and "Traceback" not in err
    assert len(config_writes) == 3  # first file, the failed second, the first put back
    assert tree_bytes(kimi) == before
    monkeypatch.setattr(fsio, "_write_all", real_write)
    code, out, _ = cli("status", kimi, "--json")
    assert code == 0 and json.loads(out)["applied"] == []
    assert not list(kimi.glob(".*.patcher-tmp"))


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b'{"format": 1, "entries": [{"id": 1, "sta', "journal is damaged (invalid JSON"),
        (b"\x00\xff garbage", "journal is damaged (not UTF-8)"),
        (b'{"format": 1, "entries": [{"id": 1}]}', "journal is damaged (malformed entry"),
        (b'{"entries": []}', "journal is damaged (no format version)"),
        (b'{"format": 99, "entries": []}', "journal format 99 is newer than this patcher"),
    ],
)
def test_damaged_or_newer_journal(cli: Cli, kimi: Path, content: bytes, needle: str) -> None:
    build_tree(kimi, {".patcher/journal.json": content})
    for command in (
        ("status", kimi),
        ("apply", kimi, "strip-fp8-kv-cache"),
        ("revert", kimi, "--all"),
    ):
        message = refused(cli, kimi, *command)
        assert ".patcher/journal.json" in message and needle in message


def test_lock_held_too_long(cli: Cli, kimi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (kimi / ".patcher").mkdir()
    fd = os.open(kimi / ".patcher" / "lock", os.O_RDWR | os.O_CREAT)
    os.write(fd, b"pid 4242: patcher apply")
    fcntl.flock(fd, fcntl.LOCK_EX)
    monkeypatch.setenv("PATCHER_LOCK_TIMEOUT", "0.2")
    try:
        message = refused(cli, kimi, "apply", kimi, "strip-fp8-kv-cache")
    finally:
        os.close(fd)
    assert "locked by another patcher (pid 4242: patcher apply)" in message
    assert "PATCHER_LOCK_TIMEOUT" in message


def test_revert_never_applied(cli: Cli, kimi: Path) -> None:
    message = refused(cli, kimi, "revert", kimi, "strip-fp8-kv-cache")
    assert "'strip-fp8-kv-cache' is not applied" in message
    assert f"next: patcher status {kimi}" in message


def test_transform_that_does_not_apply(cli: Cli, kimi: Path, tmp_path: Path) -> None:
    fix = user_transform(
        tmp_path,
        '[[edits]]\nfile = "config.json"\n'
        'require = [{ path = "/model_type", equals = "llama" }]\n'
        'ops = [{ op = "remove", path = "/dtype" }]\n',
    )
    message = refused(cli, kimi, "apply", kimi, fix)
    assert (
        f'{kimi}/config.json at /model_type (JSON pointer): expected "llama", found "kimi_k25"'
        in message
    )
    bare = build_tree(tmp_path / "bare", {"config.json": '{"model_type": "x"}'})
    message = refused(cli, bare, "apply", bare, "set-context-length", "--set", "length=4096")
    assert (
        f"{bare}/config.json at /max_position_embeddings (JSON pointer): expected an integer, "
        "found nothing; this transform does not understand this layout" in message
    )


def test_hand_edited_file_blocks_revert_and_shows_what_changed(cli: Cli, kimi: Path) -> None:
    cli("apply", kimi, "strip-fp8-kv-cache")
    config = kimi / "config.json"
    config.write_text(config.read_text().replace('"dtype": "bfloat16"', '"dtype": "float16"'))
    code, _, err = cli("revert", kimi, "strip-fp8-kv-cache")
    assert code == 1
    first, *detail = err.splitlines()
    assert first.startswith(f"error: {config} at /dtype (JSON pointer): edited by hand")
    assert "--force" in first
    assert '-    "dtype": "bfloat16",' in detail and '+    "dtype": "float16",' in detail
    code, out, _ = cli("revert", kimi, "strip-fp8-kv-cache", "--force")
    assert code == 0 and "where it still matched" in out
    text = config.read_text()
    assert '"kv_cache_scheme"' in text and '"dtype": "float16"' in text


def test_hand_edit_refusal_names_the_item_it_changed_in_a_long_list(
    cli: Cli, tmp_path: Path
) -> None:
    """The refusal names where a hand edit is, found from the bytes that differ: a changed
    merge deep in the list, an appended one, and (no pointer) an edit that broke the JSON."""
    merges = [f"a{i} b{i}" for i in range(20_000)]
    tokenizer = {"model": {"byte_fallback": False, "merges": merges}}
    files = {"config.json": "{}", "tokenizer.json": json.dumps(tokenizer, indent=2)}
    ckpt = build_tree(tmp_path / "ckpt", files)
    fix = tmp_path / "fallback.toml"
    fix.write_text(
        'name = "fallback"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n'
        '[[edits]]\nfile = "tokenizer.json"\n'
        'ops = [{ op = "replace", path = "/model/byte_fallback", value = true }]\n'
    )
    assert cli("apply", ckpt, fix)[0] == 0
    path = ckpt / "tokenizer.json"
    applied = path.read_text()
    hand_edits = {
        "/model/merges/12345": applied.replace('"a12345 b12345"', '"a12345 c12345"'),
        "/model/merges/20000": applied.replace('"a19999 b19999"', '"a19999 b19999", "x y"'),
        None: applied.replace('"a7 b7",', '"a7 b7"'),
    }
    for pointer, text in hand_edits.items():
        path.write_text(text)
        message = refused(cli, ckpt, "revert", ckpt, "fallback")
        where = "" if pointer is None else f" at {pointer} (JSON pointer)"
        assert message.startswith(f"error: {path}{where}: edited by hand since 'fallback'")


def test_journal_entry_pointing_outside_is_refused(cli: Cli, kimi: Path, tmp_path: Path) -> None:
    cli("apply", kimi, "strip-fp8-kv-cache")
    journal = kimi / ".patcher" / "journal.json"
    data = json.loads(journal.read_text())
    data["entries"][0]["files"][0]["path"] = "../victim.json"
    journal.write_text(json.dumps(data))
    (tmp_path / "victim.json").write_text("{}")
    message = refused(cli, kimi, "revert", kimi, "--all")
    assert "journal is damaged" in message
    assert "../victim.json" in message and "'..' is not allowed" in message
    assert (tmp_path / "victim.json").read_text() == "{}"


@pytest.mark.parametrize("later", [False, True])
@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda t: t.replace('"model_type"', '"model_type" oops', 1), "invalid JSON at line"),
        (lambda t: t + "\n{}", "invalid JSON at line"),  # a second document after the first
        (lambda t: t.replace('"model_type"', '"model_\udcfftype"', 1), "not UTF-8"),
    ],
)
def test_forced_revert_of_a_file_that_is_no_longer_json(
    cli: Cli, kimi: Path, later: bool, damage: Any, problem: str
) -> None:
    """--force undoes by patch what still matches, which needs the file to be JSON: a file
    broken by hand is refused in one line (it used to be an unexpected error, exit 3)."""
    cli("apply", kimi, "strip-fp8-kv-cache")
    if later:
        cli("apply", kimi, "set-torch-dtype", "--set", "dtype=float16")
    config = kimi / "config.json"
    config.write_bytes(damage(config.read_text()).encode("utf-8", "surrogateescape"))
    message = refused(cli, kimi, "revert", kimi, "strip-fp8-kv-cache", "--force")
    assert message.startswith(f"error: {config}: {problem}")
    assert "fix the file by hand" in message


@pytest.mark.parametrize(
    "command",
    [
        ["check", "{ckpt}", "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000"],
        ["plan", "{ckpt}", "--engine", "vllm==0.16.0", "--gpu", "h100"],
        ["kv-budget", "{ckpt}", "--gpu", "h100", "--engine", "sglang==0.5.23"],
        ["apply", "{ckpt}", "set-context-length", "--set", "length=100000"],
    ],
)
def test_a_number_the_engine_model_cannot_use(cli: Cli, kimi: Path, command: list[str]) -> None:
    """A RoPE factor of "x" used to crash the engine model (exit 3, 'a bug in patcher')."""
    config = kimi / "config.json"
    config.write_text(config.read_text().replace('"factor": 64.0', '"factor": "x"', 1))
    message = refused(cli, kimi, *[part.format(ckpt=kimi) for part in command])
    # apply judges the file as the transform would leave it, and says so
    where = f"{config} (as the transform would leave it)" if command[0] == "apply" else config
    assert message.startswith(
        f"error: {where} at /text_config/rope_scaling/factor (JSON pointer): expected a number "
        'from 0 to 1,048,576, found "x"; next: fix the file'
    )


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("num_key_value_heads", '"x"', 'expected a positive integer, found "x"'),
        ("head_dim", "[1]", "expected a positive integer, found [1]"),
        ("hidden_size", "3", "hidden_size 3 is smaller than num_attention_heads 40"),
    ],
)
def test_kv_budget_names_a_size_it_cannot_use(
    cli: Cli, model_checkpoint: Callable[[str], Path], key: str, value: str, problem: str
) -> None:
    ckpt = model_checkpoint("deepseek-r1-distill-qwen-32b")
    config = ckpt / "config.json"
    data = json.loads(config.read_text())
    data[key] = json.loads(value)
    config.write_text(json.dumps(data, indent=2))
    message = refused(cli, ckpt, "kv-budget", ckpt, "--gpu", "h100")
    pointer = "/hidden_size" if key == "hidden_size" else f"/{key}"
    assert message.startswith(f"error: {config} at {pointer} (JSON pointer): {problem}")


def test_kv_budget_names_a_weight_total_past_any_disk(
    cli: Cli, model_checkpoint: Callable[[str], Path]
) -> None:
    ckpt = model_checkpoint("deepseek-r1-distill-qwen-32b")
    index = ckpt / "model.safetensors.index.json"
    text = index.read_text()
    total = json.loads(text)["metadata"]["total_size"]
    index.write_text(text.replace(str(total), "9" * 400, 1))
    message = refused(cli, ckpt, "kv-budget", ckpt, "--gpu", "h100")
    assert "at /metadata/total_size (JSON pointer): expected a positive number of bytes" in message
    assert "found an integer of 400 digits" in message


def test_a_context_length_past_any_engine(cli: Cli, kimi: Path) -> None:
    message = refused(
        cli, kimi, "apply", kimi, "set-context-length", "--set", "length=" + "9" * 400
    )
    assert "must be at most 2,147,483,647, got an integer of 400 digits" in message


DEEP = "[" * 100_000 + "]" * 100_000  # past Python's recursion limit, for TOML and JSON alike


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (f"x = {DEEP}\n", "invalid TOML (nested too deeply to parse"),
        (
            '[[edits]]\nfile = "config.json"\n'
            f'ops = [{{ op = "add", path = "/x", value_json = "{DEEP}" }}]\n',
            "at /edits/0/ops/0/value_json (JSON pointer): invalid JSON (nested too deeply",
        ),
    ],
    ids=["toml", "value_json"],
)
def test_a_transform_nested_too_deeply(
    cli: Cli, kimi: Path, tmp_path: Path, body: str, needle: str
) -> None:
    """Both used to stop with exit 3 ('a bug in patcher') on a RecursionError."""
    fix = user_transform(tmp_path, body)
    assert needle in refused(cli, kimi, "apply", kimi, fix)


def test_a_profile_nested_too_deeply(cli: Cli, kimi: Path, tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(f'engine = "vllm==0.16.0"\ngpu = "h100"\nx = {DEEP}\n')
    message = refused(cli, kimi, "plan", kimi, "--profile", profile)
    assert "invalid TOML (nested too deeply to parse" in message


def test_diff_of_a_file_nested_past_the_limit(cli: Cli, kimi: Path) -> None:
    """A hand edit that nests deeper than Python parses is shown as text, not a crash."""
    cli("apply", kimi, "strip-fp8-kv-cache")
    (kimi / "config.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, out, err = cli("diff", kimi)
    assert code == 0 and "Traceback" not in out + err
    assert '+{"a": [[[[' in out
    code, out, err = cli("diff", kimi, "--json")
    assert code == 0 and "Traceback" not in out + err
    (config,) = [f for f in json.loads(out)["files"] if f["path"] == "config.json"]
    assert config["changes"] == []  # shown as text only: too deep to compare


@pytest.mark.parametrize("kind", ["folder", "pipe"])
@pytest.mark.parametrize(
    ("args", "then"),
    [
        (["apply", "{ckpt}", "strip-fp8-kv-cache"], "then run patcher status {ckpt}"),
        (["check", "{ckpt}"], "then run the command again"),
        (["check", "{ckpt}", "--engine", "vllm==0.16"], "then run the command again"),
    ],
    ids=["apply", "check", "check-engine"],
)
def test_a_folder_or_pipe_in_place_of_a_config_file_is_refused(
    kimi: Path, args: list[str], then: str, kind: str
) -> None:
    """strip-fp8-kv-cache's edit of hf_quant_config.json is optional: a folder or a pipe in its
    place was taken for a missing file, so apply said "applied" with the FP8 KV-cache directive
    left unread, and check said "no known problems"."""
    config = kimi / "hf_quant_config.json"
    config.unlink()
    if kind == "folder":
        config.mkdir()
    else:
        os.mkfifo(config)
    before = everything(kimi)
    done = subprocess.run(
        [sys.executable, "-m", "patcher", *[a.format(ckpt=kimi) for a in args]],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert f"{config}: is not a regular file" in done.stderr
    assert then.format(ckpt=kimi) in done.stderr
    assert everything(kimi) == before
    assert not (kimi / ".patcher").exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ["apply", "{ckpt}", "set-chat-template", "--set", "template={fifo}"],
            "is not a regular file",
        ),
        (["plan", "{ckpt}", "--profile", "{fifo}"], "cannot read the profile (not a regular file)"),
        (
            ["apply", "{ckpt}", "{fifo}"],
            "transform file is not a regular file (a folder or a pipe?); next: save the transform",
        ),
    ],
    ids=["file-parameter", "profile", "transform-file"],
)
def test_a_pipe_is_refused_not_waited_on(
    kimi: Path, tmp_path: Path, args: list[str], needle: str
) -> None:
    """A named pipe with no writer used to hang the command for ever."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    before = everything(kimi)
    done = subprocess.run(
        [sys.executable, "-m", "patcher", *[a.format(ckpt=kimi, fifo=fifo) for a in args]],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 1 and needle in done.stderr, done.stderr
    assert everything(kimi) == before


def test_architectures_that_are_not_names_are_not_a_crash(cli: Cli, tmp_path: Path) -> None:
    """An `architectures` list holding objects names no Qwen2 class: no sliding-window verdict,
    and no 'unexpected error' (it was an unhashable-type crash)."""
    (tmp_path / "config.json").write_text(
        '{"architectures": [{}], "use_sliding_window": true, "sliding_window": 4, '
        '"num_hidden_layers": 4, "max_window_layers": 2}'
    )
    for engine in ((), ("--engine", "vllm==0.16.0")):
        code, out, err = cli("check", tmp_path, *engine)
        assert code == 0 and "no known problems" in out and "unexpected" not in err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("config.json", "/a", '"\\ud800"'), "lone surrogate"),
        (("config.json\n", "/a", "1"), "is not a file name"),
        (("config.json ", "/a", "1"), "is not a file name"),
        (("config.json", "/a", "[" * 900 + "]" * 900), "nested more than 100 deep"),
        (("config.json", "/a", "[" * 5000 + "]" * 5000), "nested more than 100 deep"),
        (("config.json", "/text_config/0/x", "1"), "next: patcher set --help"),
    ],
)
def test_hostile_set_arguments_are_one_line_naming_the_value(
    cli: Cli, kimi: Path, args: tuple[str, ...], needle: str
) -> None:
    """The value, not the file, is blamed; nothing is applied; no exit 3; a hint names a
    command that exists."""
    message = refused(cli, kimi, "set", kimi, *args)
    assert needle in message
    assert "patcher show set-" not in message


@pytest.mark.parametrize("content", [b"[]", b'"text"', b"3"])
@pytest.mark.parametrize(
    "command",
    [
        ["check", "--engine", "vllm==0.16.0", "--gpu", "B200"],
        ["kv-budget", "--gpu", "B200"],
        ["plan", "--engine", "vllm==0.16.0", "--gpu", "B200"],
    ],
)
def test_a_config_that_is_json_but_not_an_object(
    cli: Cli, kimi: Path, content: bytes, command: list[str]
) -> None:
    (kimi / "config.json").write_bytes(content)
    message = refused(cli, kimi, command[0], kimi, *command[1:])
    assert "config.json" in message and "expected a JSON object" in message
