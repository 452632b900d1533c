"""The wheel ships the catalog inside the package and adds no generic top-level module."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import ROOT


def test_wheel_ships_catalog_under_patcher_only(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    (wheel,) = (tmp_path / "dist").glob("patcher-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {n.split("/")[0] for n in names}
    assert top_level == {
        "patcher",
        wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info",
    }
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "patcher").rglob("*.py")}
    assert sources <= set(names), sources - set(names)  # every subpackage is shipped
    catalog = {Path(n).name for n in names if n.startswith("patcher/catalog/")}
    expected = {p.name for p in (ROOT / "transforms").glob("*.toml")}
    assert expected and expected <= catalog

    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    assert not (target / "transforms").exists()
    probe = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(target)!r}); "
            "from patcher.catalog import builtin_transforms, catalog_dir; "
            "print(catalog_dir()); print(len(builtin_transforms()))",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    where, count = probe.stdout.split()
    assert where == str(target / "patcher" / "catalog") and int(count) == len(expected)
