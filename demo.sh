#!/usr/bin/env bash
# Install patcher into .venv and run apply, status, diff and revert on the bundled example
# checkpoint (a copy of it, in a temporary folder), with what vLLM 0.16 would derive on an
# RTX PRO 6000 before and after. No network beyond PyPI, no GPU.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m venv .venv
.venv/bin/pip install -q .
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r snapshots/example/kimi-k2.5-nvfp4 "$work/kimi"
cp -r "$work/kimi" "$work/kimi.orig"
patcher=.venv/bin/patcher
set -x
$patcher check "$work/kimi" --engine vllm==0.16.0 --gpu rtx-pro-6000 || echo "(exit $?: vLLM 0.16 would not start on SM120)"
$patcher apply "$work/kimi" strip-fp8-kv-cache
$patcher check "$work/kimi" --engine vllm==0.16.0 --gpu rtx-pro-6000
$patcher status "$work/kimi"
$patcher diff "$work/kimi"
$patcher revert "$work/kimi" strip-fp8-kv-cache
set +x
diff -r -x .patcher "$work/kimi" "$work/kimi.orig" && echo "demo: reverted byte for byte"
