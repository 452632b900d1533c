"""Read one vLLM or SGLang release end to end, from its wheel's own source: one command.

    python -m tools.read_release vllm 0.35.0                # downloads the wheel (pip, no deps)
    python -m tools.read_release vllm 0.35.0 --wheel W.whl  # a wheel already here
    python -m tools.read_release sglang 0.5.24              # SGLang: its registry and errors
    python -m tools.read_release --newer                    # list releases on the index not read
    python -m tools.read_release vllm --registry-only --wheel W.whl  # only its model registry

Everything is read from the wheel as text (no import, no install, no GPU), so neither the
release's pins (0.34.0 pins a flashinfer-python the index lacks) nor its compiled extensions
(``vllm._C_stable_libtorch`` imported at module level by platforms/cuda.py) stand in the way:

- the version rules, quantization methods, ``--kv-cache-dtype`` choices and the parsers of
  ``--max-model-len`` (tools/record_rules.py) -> snapshots/engines/rules-vllm.json;
- every dense MLA attention backend's KV dtypes and GPUs (tools/record_mla_backends.py)
  -> snapshots/engines/mla-backends-vllm.json;
- the quantization methods again (the engine model refuses a method its release lacks), the
  model registry, the DeepSeek-MLA model types, the ``--tool-call-parser`` and
  ``--reasoning-parser`` names and the memory defaults (block size,
  ``gpu_memory_utilization``, the extensible KV cache) (tools/read_source.py) ->
  patcher/engines/vllm_releases.json, which the engine model itself reads, with the date;
- every start-up error message (tools/read_errors.py) -> patcher/advice/errors-vllm.json,
  the catalogue doctor matches logs against;
- every module of the package and the names each binds (tools/read_exports.py) ->
  patcher/advice/exports-vllm.json.gz, what doctor names for an import written for another
  release;
- the names it imports only where a library is installed, set to None otherwise
  (tools/read_optional_imports.py) -> patcher/advice/optional-imports-vllm.json, what doctor
  names when a traceback's line calls or reads one of them;
- the keys its start-up code asserts a dict holds, and reads with a default in later releases
  (tools/read_asserted_keys.py) -> patcher/advice/asserted-keys-vllm.json, what doctor names
  when a traceback shows one of those asserts failed.

``--registry-only`` reads only a vLLM release's model registry into
patcher/engines/vllm_architectures.json: the releases older than the engine model reads (0.2.7
to 0.10.0, whose start-up errors the catalogue also holds), so that doctor names the first
release that lists a model class, and the last before one dropped it, from the registries
themselves.

For SGLang, its model registry (``EntryClass`` of each module in ``srt/models/``,
tools/read_source.py) -> patcher/engines/sglang_architectures.json, its start-up errors ->
patcher/advice/errors-sglang.json, its modules and names ->
patcher/advice/exports-sglang.json.gz, its optional imports ->
patcher/advice/optional-imports-sglang.json, and its asserted keys ->
patcher/advice/asserted-keys-sglang.json.

Every part must find what it reads: a part that finds nothing stops the command with its name
and nothing is written (all parts are read first, then the files are written once). It ends
with what changed since the release read before it, which says where the engine model's
hand-written rules need a look; ``pytest tests/engines`` then holds the model to the reading.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from tools import (
    read_asserted_keys,
    read_binaries,
    read_errors,
    read_exports,
    read_optional_imports,
    record_mla_backends,
    record_rules,
)
from tools.read_source import (
    Release,
    SourceMissing,
    architectures,
    memory_defaults,
    mla_compressed_by_head_dim,
    mla_model_types,
    modelopt_quantized_lm_head,
    parsers,
    sglang_architectures,
    version_of,
)

ROOT = Path(__file__).resolve().parents[1]
RELEASES = ROOT / "patcher" / "engines" / "vllm_releases.json"
ARCHITECTURES = ROOT / "patcher" / "engines" / "vllm_architectures.json"
SGLANG_ARCHITECTURES = ROOT / "patcher" / "engines" / "sglang_architectures.json"
INDEX = "https://pypi.org/pypi/vllm/json"


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def download(version: str, into: Path, engine: str = "vllm") -> Path:
    """``pip download --no-deps`` of the release's wheel (its pins are never resolved)."""
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
        + ["-d", str(into), f"{engine}=={version}"],
        check=True,
    )
    found = sorted(into.glob(f"{engine}-{version}-*.whl"))
    if not found:
        raise SystemExit(f"pip downloaded no {engine}-{version} wheel into {into}")
    return found[0]


def requires(wheel: Path) -> list[str]:
    """The wheel's own Requires-Dist, its markers evaluated for this machine (no extras)."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode()
    found = []
    for line in metadata.splitlines():
        if line.startswith("Requires-Dist: "):
            wanted = Requirement(line.removeprefix("Requires-Dist: "))
            if wanted.marker is None or wanted.marker.evaluate({"extra": ""}):
                found.append(str(wanted))
    return found


def install(wheel: Path, venv: Path) -> list[str]:
    """The release in a venv of its own: the wheel with --no-deps, then its own Requires-Dist,
    less each that the index cannot give (0.34.0 pins a flashinfer-python it lacks): pip is
    asked again without it, and it is named. Returns what was left out."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--no-deps", str(wheel)], check=True)
    wanted, left_out = requires(wheel), []
    for _ in range(20):
        done = subprocess.run([*pip, *wanted], capture_output=True, text=True)
        if done.returncode == 0:
            return left_out
        missing = re.search(r"No matching distribution found for ([A-Za-z0-9_.\-]+)", done.stderr)
        if missing is None:
            raise SystemExit(f"pip could not install vllm's requirements:\n{done.stderr[-2000:]}")
        name = missing.group(1).lower().replace("_", "-")
        left_out += [
            w for w in wanted if re.split(r"[<>=!~ ;\[]", w)[0].lower().replace("_", "-") == name
        ]
        wanted = [w for w in wanted if w not in left_out]
    raise SystemExit("pip kept failing after 20 requirements were left out")


def read_wheel(wheel: Path) -> dict[str, Any]:
    """Every part of the reading of one wheel; SystemExit naming the part that found nothing."""
    version = version_of(wheel)
    release = Release(wheel)
    parts: dict[str, Any] = {"version": version}
    try:
        parts["rules"] = record_rules.read(str(wheel))[1]
    except SystemExit as exc:
        raise SystemExit(f"vllm {version}: the rules were not read: {exc}") from None
    backends = record_mla_backends.read(wheel)[1]
    if _key(version) >= (0, 12, 0) and not any(backends.values()):
        raise SystemExit(f"vllm {version}: no MLA backend declares supported_kv_cache_dtypes")
    parts["backends"] = backends
    with zipfile.ZipFile(wheel) as archive:
        parts["cuda_archs"] = read_binaries.cuda_archs(archive)["cuda_arch"]
    if not parts["cuda_archs"]:
        raise SystemExit(f"vllm {version}: no kernel images in its _C extension")
    for name, reader in (
        ("architectures", architectures),
        ("mla_model_types", mla_model_types),
        ("mla_compressed_by_head_dim", mla_compressed_by_head_dim),
        ("modelopt_quantized_lm_head", modelopt_quantized_lm_head),
        ("parsers", parsers),
        ("memory", memory_defaults),
    ):
        try:
            parts[name] = reader(release)
        except SourceMissing as exc:
            raise SystemExit(f"vllm {version}: {name} was not read: {exc}") from None
    return parts


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def _ordered(releases: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(releases.items(), key=lambda kv: _key(kv[0])))


def architectures_by_release(chain: dict[str, Any]) -> dict[str, list[str]]:
    """The delta chain of vllm_architectures.json as a full list per release."""
    names: set[str] = set()
    full: dict[str, list[str]] = {}
    for version, step in _ordered(chain).items():
        names = (names - set(step["removed"])) | set(step["added"])
        full[version] = sorted(names)
    return full


def _as_chain(full: dict[str, list[str]]) -> dict[str, Any]:
    chain: dict[str, Any] = {}
    before: set[str] = set()
    for version, names in _ordered(full).items():
        chain[version] = {
            "added": sorted(set(names) - before),
            "removed": sorted(before - set(names)),
        }
        before = set(names)
    return chain


def write(readings: list[dict[str, Any]], today: str) -> None:
    """Write every reading into the four files, once each."""
    rules = _load(record_rules.OUT).get("releases", {})
    backends = _load(record_mla_backends.OUT).get("releases", {})
    releases = _load(RELEASES).get("releases", {})
    arch_file = _load(ARCHITECTURES)
    full = architectures_by_release(arch_file.get("releases", {}))
    for reading in readings:
        version = reading["version"]
        rules[version] = reading["rules"]
        if any(reading["backends"].values()):
            backends[version] = reading["backends"]
        releases[version] = {
            "read_on": today,
            "quantization_methods": reading["rules"]["quantization_methods"],
            "mla_model_types": reading["mla_model_types"],
            "mla_compressed_by_head_dim": reading["mla_compressed_by_head_dim"],
            "modelopt_quantized_lm_head": reading["modelopt_quantized_lm_head"],
            "tool_parsers": reading["parsers"]["tool"],
            "reasoning_parsers": reading["parsers"]["reasoning"],
            "memory": reading["memory"],
            "cuda_archs": reading["cuda_archs"],
        }
        full[version] = reading["architectures"]
    made_by = f"python -m tools.read_release vllm VERSION ({today})"
    outputs = (
        (record_rules.OUT, {"made_by": made_by, "releases": _ordered(rules)}),
        (record_mla_backends.OUT, {"made_by": made_by, "releases": _ordered(backends)}),
        (RELEASES, {"made_by": made_by, "releases": _ordered(releases)}),
        (
            ARCHITECTURES,
            {
                "made_by": made_by + ": each release's names as added to and removed from "
                "the release read before it",
                "releases": _as_chain(full),
            },
        ),
    )
    for path, content in outputs:
        path.write_text(json.dumps(content, indent=1) + "\n")


def changes(before: dict[str, Any] | None, after: dict[str, Any]) -> list[str]:
    """What the new reading changes against the release read before it (for the model's
    hand-written rules: tests/engines holds them to the reading)."""
    if before is None:
        return ["(no earlier release read)"]
    lines = []

    def diff(what: str, old: list[str], new: list[str]) -> None:
        added, removed = sorted(set(new) - set(old)), sorted(set(old) - set(new))
        if added or removed:
            lines.append(f"{what}: +{added} -{removed}")

    diff(
        "quantization methods",
        before["rules"]["quantization_methods"],
        after["rules"]["quantization_methods"],
    )
    diff(
        "--kv-cache-dtype choices",
        before["rules"]["kv_cache_dtypes"],
        after["rules"]["kv_cache_dtypes"],
    )
    diff("MLA model types", before["mla_model_types"], after["mla_model_types"])
    diff("architectures", before["architectures"], after["architectures"])
    diff(
        "MLA backends",
        [k for k, v in before["backends"].items() if v],
        [k for k, v in after["backends"].items() if v],
    )
    if before.get("mla_compressed_by_head_dim") != after["mla_compressed_by_head_dim"]:
        lines.append(f"MLA by head_dim when compressed: {after['mla_compressed_by_head_dim']}")
    if before["memory"] != after["memory"]:
        lines.append(f"memory defaults: {before['memory']} -> {after['memory']}")
    for rule in sorted(after["rules"]):
        if (
            rule not in ("quantization_methods", "kv_cache_dtypes")
            and before["rules"].get(rule) != after["rules"][rule]
        ):
            lines.append(f"rule {rule}: {before['rules'].get(rule)} -> {after['rules'][rule]}")
    return lines or ["nothing the engine model reads changed"]


def newer_on_index() -> list[str]:
    """The releases on the package index newer than the newest read (needs the network)."""
    with urllib.request.urlopen(INDEX, timeout=30) as answer:  # noqa: S310 (a fixed https URL)
        listed = json.load(answer)["releases"]
    newest = max(_load(RELEASES)["releases"], key=_key)
    final = [v for v in listed if re.fullmatch(r"\d+\.\d+\.\d+", v)]
    return sorted((v for v in final if _key(v) > _key(newest)), key=_key)


def _read(wheels: list[Path]) -> None:
    """Read every wheel, write the readings once, and say what changed in each."""
    readings = sorted((read_wheel(w) for w in wheels), key=lambda r: _key(r["version"]))
    write(readings, datetime.date.today().isoformat())
    catalogue = read_errors.record("vllm", wheels, datetime.date.today().isoformat())
    print(f"start-up errors: {catalogue}")
    print(f"modules and names: {read_exports.record('vllm', wheels)}")
    print(f"optional imports: {read_optional_imports.record('vllm', wheels)}")
    print(f"asserted keys: {read_asserted_keys.record('vllm', wheels)}")
    rules = _load(record_rules.OUT)["releases"]
    backends = _load(record_mla_backends.OUT)["releases"]
    releases = _load(RELEASES)["releases"]
    names = architectures_by_release(_load(ARCHITECTURES)["releases"])
    for reading in readings:
        older = [v for v in releases if _key(v) < _key(reading["version"])]
        before = None
        if older:
            v = max(older, key=_key)
            before = {
                "rules": rules[v],
                "backends": backends.get(v, {}),
                "mla_model_types": releases[v]["mla_model_types"],
                "mla_compressed_by_head_dim": releases[v].get("mla_compressed_by_head_dim"),
                "memory": releases[v]["memory"],
                "architectures": names[v],
            }
        print(f"vllm {reading['version']}: read" + (f" (against {v})" if older else ""))
        for line in changes(before, reading):
            print(f"  {line}")


def _write_registries(engine: str, wheels: list[Path]) -> dict[str, list[str]]:
    """Each wheel's model registry, written once into ``<engine>_architectures.json`` with the
    releases read before; the registries before the write, for the report."""
    path = SGLANG_ARCHITECTURES if engine == "sglang" else ARCHITECTURES
    reader = sglang_architectures if engine == "sglang" else architectures
    recorded = _load(path)
    full = architectures_by_release(recorded.get("releases", {}))
    before = dict(full)
    for wheel in wheels:
        version = version_of(wheel, engine)
        try:
            full[version] = reader(Release(wheel))
        except SourceMissing as exc:
            raise SystemExit(f"{engine} {version}: architectures was not read: {exc}") from None
    made_by = recorded.get("made_by", "") if engine == "vllm" else ""
    today = datetime.date.today().isoformat()
    content = {
        "made_by": made_by
        or f"python -m tools.read_release {engine} VERSION ({today}): each release's names "
        "as added to and removed from the release read before it",
        "releases": _as_chain(full),
    }
    path.write_text(json.dumps(content, indent=1) + "\n")
    for version in sorted({version_of(w, engine) for w in wheels}, key=_key):
        older = [v for v in full if _key(v) < _key(version)]
        print(f"{engine} {version}: read" + (f" (against {max(older, key=_key)})" if older else ""))
        if older:
            old, new = set(full[max(older, key=_key)]), set(full[version])
            print(f"  architectures: +{sorted(new - old)} -{sorted(old - new)}")
        elif version in before and before[version] != full[version]:
            print("  architectures changed for this release")
    return before


def _read_sglang(wheels: list[Path]) -> None:
    """SGLang: each wheel's model registry, written once with the releases read before, and
    its start-up errors; what each release added to and removed from the registry."""
    today = datetime.date.today().isoformat()
    _write_registries("sglang", wheels)
    print(f"start-up errors: {read_errors.record('sglang', wheels, today)}")
    print(f"modules and names: {read_exports.record('sglang', wheels)}")
    print(f"optional imports: {read_optional_imports.record('sglang', wheels)}")
    print(f"asserted keys: {read_asserted_keys.record('sglang', wheels)}")


def _install_and_record(wheel: Path, venv_base: Path) -> None:
    """Install the release in a venv of its own and record what its config code derives."""
    version = version_of(wheel)
    venv = venv_base.with_name(f"{venv_base.name}-{version}")
    left_out = install(wheel, venv)
    print(f"vllm {version}: installed in {venv}" + (f", less {left_out}" if left_out else ""))
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "record_engines.py"),
            "--version",
            version,
            "--python",
            str(venv / "bin" / "python"),
        ],
        check=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "engine", nargs="?", choices=["vllm", "sglang"], help="the engine (vllm or sglang)"
    )
    parser.add_argument("versions", nargs="*", metavar="VERSION", help="releases to read")
    parser.add_argument("--wheel", type=Path, action="append", default=[], help="a wheel here")
    parser.add_argument("--wheels", type=Path, help="where to download (default: a temp folder)")
    parser.add_argument("--newer", action="store_true", help="list releases not read yet")
    parser.add_argument(
        "--registry-only",
        action="store_true",
        help="read only each vLLM release's model registry (for releases older than the "
        "engine model reads, which doctor names a release from)",
    )
    parser.add_argument(
        "--venv",
        type=Path,
        help="also install each release in VENV-X.Y.Z (its pins less what the index lacks) and "
        "record what its config code derives (tools/record_engines.py)",
    )
    args = parser.parse_args(argv)
    if args.newer:
        print("\n".join(newer_on_index()) or "every release on the index was read")
        return 0
    if args.engine is None or not (args.versions or args.wheel):
        parser.error("name the engine and at least one VERSION (or --wheel)")
    with tempfile.TemporaryDirectory() as tmp:
        wheels = list(args.wheel) + [
            download(v, args.wheels or Path(tmp), args.engine) for v in args.versions
        ]
        if args.engine == "vllm" and args.registry_only:
            _write_registries("vllm", wheels)
            print("next: python -m pytest tests/engines tests/advice  (both read the registry)")
            return 0
        if args.engine == "sglang":
            _read_sglang(wheels)
            print("next: python -m pytest tests/advice  (doctor reads SGLang's registry)")
            return 0
        _read(wheels)
        for wheel in wheels if args.venv else []:
            _install_and_record(wheel, args.venv)
    print("next: python -m pytest tests/engines  (holds the engine model to the reading)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
