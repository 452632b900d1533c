"""doctor on the Marlin kernel refusing a weight shard: the vLLM release that pads shards to
its tiles (read per release), and a tensor-parallel size whose shard is a multiple."""

from __future__ import annotations

import zipfile
from pathlib import Path

from patcher.advice.doctor import diagnose_text
from tools.read_quantization import MARLIN_UTILS, marlin_pads

MARLIN_LINES = ["RuntimeError: size_n = 2736 is not divisible by tile_n_size = 64"]


def test_glm_4_5_air_fp8_on_eight_ampere_gpus_gets_the_padding_release_and_a_smaller_tp() -> None:
    # GLM-4.5-Air's gate and up projections (2 x 10944) split eight ways: 2736 per rank
    found = diagnose_text(
        "(APIServer pid=1) INFO 10-17 14:00:00 [utils.py:326] non-default args: {'model': "
        "'/m', 'tensor_parallel_size': 8}\n"
        "(Worker_TP7 pid=312) ERROR 10-17 14:02:34 [multiproc_executor.py:628] "
        f"{MARLIN_LINES[0]}\n"
    )
    assert found.code == "marlin-tile"
    # marlin_utils.py pads linear layers from 0.24.0 and experts from 0.25.0
    assert found.fixes[0].text == "pip install 'vllm>=0.25.0'"
    # 21888 / 2 = 10944 = 171 x 64; 21888 / 4 = 5472 is not a multiple of 64
    assert "--tensor-parallel-size 2 --pipeline-parallel-size 4" in found.fixes[1].text


def test_under_sglang_no_vllm_release_is_named() -> None:
    found = diagnose_text(
        "[2025-07-31 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=4)\n"
        f"[2025-07-31 10:00:09 TP0] {MARLIN_LINES[0].replace('2736', '5472')}\n"
    )
    assert found.code == "marlin-tile"
    assert all("vllm" not in f.text for f in found.fixes)
    assert "--tp-size 2 --pp-size 2" in found.fixes[0].text


def test_the_reader_counts_a_padding_helper_only_where_another_module_calls_it(
    tmp_path: Path,
) -> None:
    wheel = tmp_path / "vllm-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            MARLIN_UTILS,
            "def marlin_padded_nk(n, k):\n    pass\n"
            "def marlin_moe_padded_intermediate(i):\n    pass\n",
        )
        archive.writestr(
            "vllm/model_executor/layers/quantization/utils/marlin_utils_fp8.py",
            "from .marlin_utils import marlin_padded_nk\n",
        )
    with zipfile.ZipFile(wheel) as archive:
        assert marlin_pads(archive) == {"marlin_pads": ["dense"]}
