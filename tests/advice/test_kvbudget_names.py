"""kv_budget takes make_target's and the CLI's names; the older keywords still work, warned."""

from __future__ import annotations

import pytest

from patcher.advice.kvbudget import kv_budget
from tests.conftest import SNAPSHOTS

EXAMPLE = SNAPSHOTS / "example" / "kimi-k2.5-nvfp4"


def test_the_older_keywords_give_the_same_budget_and_warn() -> None:
    new = kv_budget(EXAMPLE, gpu="rtx-pro-6000", tensor_parallel=8, weights="590GB")
    with pytest.warns(DeprecationWarning, match="tp= is now tensor_parallel="):
        old = kv_budget(EXAMPLE, gpu="rtx-pro-6000", tp=8, weights_gib="590GB")
    assert old.to_json() == new.to_json()


def test_an_unknown_keyword_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="'tensor_paralel'"):
        kv_budget(EXAMPLE, gpu="h100", tensor_paralel=8)
