"""The wheel ships the catalog inside the package and adds no generic top-level module."""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

_NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "*.so"
)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the repository's sources for this worker's builds: setuptools builds
    in the source folder (build/, *.egg-info), so two builds of one folder at once (the tests
    run in parallel) collide."""
    return Path(shutil.copytree(ROOT, tmp_path_factory.mktemp("src") / "repo", ignore=_NOT_SOURCE))


def _run(command: list[str | Path], cwd: Path | None = None) -> None:
    """Run a build or install step; on failure, the assertion carries pip's own words."""
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory, source: Path) -> Path:
    """A folder with the wheel of this repository, built once for the module's tests."""
    folder = tmp_path_factory.mktemp("dist")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(folder),
            str(source),
        ],
        cwd=folder,
    )
    return folder


def _install(source: Path, target: Path) -> Path:
    """``pip install --no-deps --target`` of a wheel or of this repository; the folder."""
    _run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", target, source])
    return target


def test_wheel_ships_catalog_under_patcher_only(dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("checkpoint_patcher-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {n.split("/")[0] for n in names}
    assert top_level == {
        "patcher",
        wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info",
    }
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "patcher").rglob("*.py")}
    assert sources <= set(names), sources - set(names)  # every subpackage is shipped
    catalog = {Path(n).name for n in names if n.startswith("patcher/transforms/builtin/")}
    expected = {p.name for p in (ROOT / "transforms").glob("*.toml")}
    assert expected and expected <= catalog

    # The C scanner is in it, built against the stable ABI: one wheel serves 3.11 and later.
    assert "-cp311-abi3-" in wheel.name, wheel.name
    assert "patcher/text/_scan.abi3.so" in names and "patcher/text/_scan.pyi" in names

    target = _install(wheel, tmp_path / "site")
    assert not (target / "transforms").exists()
    probe = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(target)!r}); "
            "from patcher.transforms.catalog import builtin_transforms, catalog_dir; "
            "from patcher.text import scanner; assert scanner.native is not None; "
            "print(catalog_dir()); print(len(builtin_transforms()))",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    where, count = probe.stdout.split()
    assert where == str(target / "patcher" / "transforms" / "builtin") and int(count) == len(
        expected
    )


def test_users_program_type_checks_against_the_installed_package(
    tmp_path: Path, source: Path
) -> None:
    """py.typed is shipped: a provisioning script passes mypy --strict against the wheel."""
    target = _install(source, tmp_path / "site")
    assert (target / "patcher" / "py.typed").exists()
    program = tmp_path / "provision.py"
    program.write_text(
        "from patcher import PatcherError, apply, make_target, plan, status\n"
        "\n"
        "def ensure(path: str) -> int:\n"
        "    try:\n"
        "        result = apply(path, 'strip-fp8-kv-cache')\n"
        "    except PatcherError as error:\n"
        "        print(error.hint)\n"
        "        return 1\n"
        "    pending = plan(path, make_target(engine='vllm==0.16.0', gpu='h200'))\n"
        "    print(result.outcome, len(status(path).applied), pending.in_sync)\n"
        "    return 0\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(program)],
        capture_output=True,
        text=True,
        env={**os.environ, "MYPYPATH": str(target)},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_flat_api_names_match_patcher_api() -> None:
    import patcher
    from patcher import api

    assert set(patcher.__all__) == set(api.__all__)
    assert all(getattr(patcher, name) is getattr(api, name) for name in api.__all__)


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("```python\n", text.index("<!-- example: use-from-python -->")) + 10
    return text[start : text.index("```\n", start)]


def test_the_readme_python_example_runs_unchanged_on_the_installed_package(
    tmp_path: Path, source: Path
) -> None:
    """The README's "Use from Python" block, against the package pip installs (not the
    source tree), from a clone's folder, and type-checked as a user's program would be."""
    target = _install(source, tmp_path / "site")
    program = tmp_path / "provision.py"
    program.write_text(_readme_example())
    clone = tmp_path / "clone"
    shutil.copytree(ROOT / "snapshots" / "example", clone / "snapshots" / "example")
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(target)!r}); "
            f"import runpy; runpy.run_path({str(program)!r}, run_name='__main__')",
        ],
        capture_output=True,
        text=True,
        cwd=clone,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "apply strip-fp8-kv-cache -- needed" in done.stdout
    assert "applied\nalready-applied\n" in done.stdout
    assert "next: patcher show strip-fp8-kv-cache" in done.stdout
    typed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(program)],
        capture_output=True,
        text=True,
        env={**env, "MYPYPATH": str(target)},
        cwd=tmp_path,
    )
    assert typed.returncode == 0, typed.stdout + typed.stderr


def _docker_context(destination: Path) -> int:
    """Copy what ``docker build .`` would send (the repository less .dockerignore's patterns:
    top-level names, and ``**/NAME`` anywhere); the bytes sent."""
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    anywhere = [p[3:] for p in patterns if p.startswith("**/")]
    top = [p for p in patterns if not p.startswith("**/")]

    def ignored(relative: Path) -> bool:
        return any(fnmatch.fnmatch(relative.parts[0], p) for p in top) or any(
            fnmatch.fnmatch(part, p) for part in relative.parts for p in anywhere
        )

    sent = 0
    for path in sorted(ROOT.rglob("*")):
        relative = path.relative_to(ROOT)
        if ignored(relative) or not path.is_file():
            continue
        (destination / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination / relative)
        sent += path.stat().st_size
    return sent


def test_the_dockerfile_builds_the_wheel_from_a_small_context(tmp_path: Path) -> None:
    """The image's two stages, run as their commands: the build stage makes the wheel from the
    context .dockerignore leaves (a fresh clone needs no wheel built first), the final stage
    installs it (never a package fetched by the name patcher) and patcher runs."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    runs = [line[4:] for line in dockerfile.splitlines() if line.startswith("RUN ")]
    assert len(runs) == 2 and "pip wheel" in runs[0] and " patcher" not in runs[1]
    assert "COPY --from=build /dist/ /tmp/wheels/" in dockerfile
    context = tmp_path / "context"
    sent = _docker_context(context)
    # was 220 MB with the venv; 5.3 MB of it now is doctor's catalogue of the engines'
    # start-up errors and what each release declares (patcher/advice/errors-*.json, package
    # data kept readable in git: 31 vLLM releases, 27 SGLang, 44 transformers, their start-up
    # files read as far as the MoE, linear and attention layers; about 90 kB more per release),
    # and 1.2 MB each release's modules and names (patcher/advice/exports-*.json.gz, gzip)
    assert sent < 10_000_000, sent
    wheels = tmp_path / "wheels"
    build = runs[0].replace("python", sys.executable, 1).replace("-w /dist", f"-w {wheels}")
    # The image fetches setuptools for the build; offline, this venv's own is used.
    subprocess.run(build + " --no-build-isolation", shell=True, check=True, cwd=context)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    install = runs[1].split("&&")[0].replace("python", str(venv / "bin" / "python"), 1)
    install = install.replace("/tmp/wheels", str(wheels))
    subprocess.run(install, shell=True, check=True, capture_output=True)
    done = subprocess.run([venv / "bin" / "patcher", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("patcher ")
    example = ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4"
    listed = subprocess.run([venv / "bin" / "patcher", "status", example], capture_output=True)
    assert listed.returncode == 0, listed.stderr
