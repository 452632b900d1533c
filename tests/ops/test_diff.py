"""patcher diff: what patcher changed, and what to run to see more."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Cli


def test_diff_on_a_folder_patcher_never_touched_says_nothing_is_applied(
    cli: Cli, kimi: Path
) -> None:
    code, out, _ = cli("diff", kimi)
    assert code == 0 and out.startswith("nothing applied: patcher has no journal")
    assert f"patcher diff {kimi} --upstream" in out


def test_the_upstream_diff_suggested_pastes_for_a_path_with_a_space(cli: Cli, kimi: Path) -> None:
    spaced = kimi.parent / "my models" / "kimi"
    spaced.parent.mkdir()
    kimi.rename(spaced)
    out = cli("diff", spaced)[1]
    assert f"patcher diff '{spaced}' --upstream" in out
