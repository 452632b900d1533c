"""The engine model's MLA backend table against each release's own source.

``snapshots/engines/mla-backends-vllm.json`` holds ``supported_kv_cache_dtypes`` and the
``supports_compute_capability`` check of the five dense MLA backends, read from the wheels
(0.13.0 to 0.15.0, 0.17.0 to 0.23.0, 0.30.0) and the installed releases (0.16.0, 0.32.0 live,
0.33.0) by tools/record_mla_backends.py."""

from __future__ import annotations

import json

import pytest

from patcher.engines.engine import parse_engine
from patcher.engines.vllm_kv import MLA_BFLOAT16_FROM, MLA_DTYPES_WIDENED, backend_table
from tests.conftest import SNAPSHOTS

RELEASES = json.loads((SNAPSHOTS / "engines" / "mla-backends-vllm.json").read_text())["releases"]


def test_the_releases_on_both_sides_of_each_boundary_were_read() -> None:
    assert {"0.14.0", "0.15.0", "0.16.0", "0.17.0", "0.18.0", "0.33.0"} <= set(RELEASES)
    assert MLA_DTYPES_WIDENED == (0, 18, 0) and MLA_BFLOAT16_FROM == (0, 15, 0)


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_each_backend_takes_the_kv_dtypes_and_gpus_its_release_lists(version: str) -> None:
    """The KV dtypes (supported_kv_cache_dtypes) and the compute-capability majors
    (supports_compute_capability; none listed: any GPU) of each backend, per release."""
    table = backend_table(parse_engine(f"vllm=={version}"))
    for backend, listed in RELEASES[version].items():
        assert listed is not None, (version, backend)
        majors, dtypes = table[backend]
        assert sorted(dtypes) == sorted(listed["kv_cache_dtypes"]), (version, backend)
        assert list(majors) == listed["capability_majors"], (version, backend)
