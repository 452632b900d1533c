"""Turning library results into text for people and JSON for scripts (no IO here)."""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any

from patcher.text.document import BOM
from patcher.text.secrets import mask_words
from patcher.text.textdiff import unified
from patcher.units import GIB

if TYPE_CHECKING:  # only for annotations: `patcher status` must not import the apply machinery
    from patcher.advice.check import CheckReport
    from patcher.advice.diagnosis import Diagnosis
    from patcher.advice.kvbudget import KvBudget
    from patcher.advice.overrides import Overrides
    from patcher.engines.engine import Engine
    from patcher.engines.view import EngineView
    from patcher.ops.adding import ApplyResult
    from patcher.ops.diff import CheckpointDiff
    from patcher.ops.forget import ForgetResult
    from patcher.ops.reapply import ReapplyResult
    from patcher.ops.rebase import RebaseResult
    from patcher.ops.restore import RestoreResult
    from patcher.ops.revert import RevertResult
    from patcher.ops.run import RunPlan
    from patcher.ops.sync import Plan, SyncResult
    from patcher.ops.upstream import UpstreamDiff
    from patcher.store.file_status import Status
    from patcher.text.document import Op
    from patcher.transforms.definition import Guard, Transform

FILE_STATES: dict[str, str] = {
    "patched": "patched as recorded",
    "changed": "changed since patched (hand edit?)",
    "original": "back to the original (upstream) bytes, e.g. re-downloaded: run patcher reapply",
    "missing": "missing",
    "reverted": "reverted",
    "edited": "reverted, then edited: differs from its original (upstream) bytes",
    "half-done": "HALF-DONE: an interrupted change could not be settled",
    "upstream": "new upstream version (re-downloaded, or in an overlay's source): "
    "run patcher rebase",
}


def to_json(data: Any) -> str:
    """Pretty JSON for ``--json`` output."""
    return json.dumps(data, indent=2, ensure_ascii=False)


def _op_line(op: Op) -> str:
    if op["op"] in ("remove",):
        return f"remove {op['path']}"
    value = json.dumps(op.get("value"), ensure_ascii=False)
    if len(value) > 60:
        value = value[:57] + "..."
    return f"{op['op']} {op['path'] or '(whole file)'} = {value}"


def _params(params: Any) -> str:
    return " ".join(f"{k}={json.dumps(v)}" for k, v in params.items()) if params else ""


def _guard_text(g: Guard) -> str:
    if g.has_equals:
        return f"{g.path} = {json.dumps(g.equals)}"
    if g.one_of is not None:
        return f"{g.path} in {json.dumps(list(g.one_of))}"
    if g.type is not None:
        return f"{g.path} is {g.type}"
    return f"{g.path} {'present' if g.exists else 'absent'}"


def transform_list_text(transforms: tuple[Transform, ...]) -> str:
    """``patcher list``."""
    width = max((len(t.name) for t in transforms), default=0)
    return "\n".join(f"{t.name:<{width}}  {t.summary}" for t in transforms)


def transform_text(t: Transform, flags_verdict: str | None = None) -> str:
    """``patcher show NAME``."""
    lines = [f"{t.name}: {t.summary}", "", "Files:"]
    for edit in t.edits:
        extra = " (if present)" if edit.optional else ""
        scope = " [inside text_config when the config has one]" if edit.scope != "root" else ""
        lines.append(f"  {edit.file}{extra}{scope}")
        for label, guards in (("only when", edit.when), ("refuses unless", edit.require)):
            if guards:
                lines.append(f"    {label}: " + ", ".join(_guard_text(g) for g in guards))
        for op in edit.ops:
            lines.append(f"    {op['op']} {op.get('path', '(whole file)')}")
    if t.symptom:
        lines += ["", "Fixes:", f"  {t.symptom}"]
    lines += ["", "Why:", f"  {t.why}", "", "Undo when:", f"  {t.undo_when}"]
    flags = " ".join(t.runtime.flags) if t.runtime else ""
    note = [f"  {t.runtime.note}"] if t.runtime and t.runtime.note else []
    if t.engine_flag:
        lines += ["", "Engine flag that does the same without editing files:", f"  {t.engine_flag}"]
        lines += note
    elif flags or note:
        lines += ["", "Engine flags:", *([f"  {flags}"] if flags else []), *note]
    if flags_verdict:
        lines += [f"  {flags_verdict}"]
    if t.effects:
        effects = ", ".join(f"{k} = {v}" for k, v in t.effects.items())
        lines += ["", "Declared effect (checked against the engine model):", f"  {effects}"]
    if t.params:
        lines += ["", "Parameters (--set NAME=VALUE):"]
        for p in t.params:
            default = "required" if p.required else f"default {json.dumps(p.default)}"
            lines.append(f"  {p.name} ({p.type}, {default}): {p.help}")
    if t.evidence:
        lines += ["", "Evidence:"] + [f"  {link}" for link in t.evidence]
    return "\n".join(lines)


def apply_text(r: ApplyResult, named: str | None = None) -> str:
    """An apply result for people (``named``: the checkpoint as the user typed it, which the
    suggested undo command echoes)."""
    name, root = r.transform.name, r.checkpoint
    if r.outcome == "nothing-to-do":
        return f"nothing to do: {name} changes nothing in {root}"
    if r.outcome == "already-applied":
        return f"nothing to do: {name} is already applied to {root} (entry {r.entry_id})"
    lines: list[str] = []
    if r.outcome == "dry-run":
        replacing = "" if r.replaced is None else f" (replacing entry {r.replaced})"
        lines.append(
            f"dry run: {name}{replacing} would change {_count(len(r.files), 'file')} in {root}"
        )
        for f in r.files:
            lines.append(unified(f.before, f.after, f"a/{f.path}", f"b/{f.path}").rstrip("\n"))
        lines.append("RFC 6902 patch per file:")
        lines.append(to_json({f.path: list(f.forward) for f in r.files}))
        lines.append("nothing was written")
        return "\n".join(lines)
    if r.replaced is not None and r.entry_id is None:
        # The new parameters change nothing upstream: the old entry is undone, none is added.
        return (
            f"reverted {name} (entry {r.replaced}) in {root}: with these parameters it "
            "changes nothing upstream, so it is no longer applied"
        )
    if r.replaced is not None:
        lines.append(f"applied {name} (entry {r.entry_id}, replacing entry {r.replaced}) to {root}")
    else:
        lines.append(f"applied {name} (entry {r.entry_id}) to {root}")
    for f in r.files:
        if f.kind == "text":  # one whole-text replacement: say what it did, not the new text
            what = (
                f"byte-order mark removed ({len(BOM)} bytes)"
                if f.before == BOM + f.after
                else f"whole file replaced ({len(f.before):,} -> {len(f.after):,} bytes)"
            )
            lines.append(f"  {f.path}: {what}")
            continue
        for op in f.forward:
            if op["op"] != "test":
                lines.append(f"  {f.path}: {_op_line(op)}")
    lines.append(f"undo with: patcher revert {shlex.quote(named or str(root))} {name}")
    return "\n".join(lines)


_HOW = {
    "original": "original bytes restored",
    "previous": "the bytes before this entry restored (an earlier entry's edit stays)",
    "inverse": "inverse patch applied (later transforms kept)",
    "forced": "inverse patch applied where it still matched (--force)",
    "discarded": "the bytes before this entry restored, the hand edit discarded",
    "already-original": "already original",
}


def revert_text(r: RevertResult) -> str:
    """A revert result for people."""
    if r.outcome == "nothing-to-do":
        return f"nothing to do: no transform is applied to {r.checkpoint}"
    verb = "would revert" if r.outcome == "dry-run" else "reverted"
    lines = []
    for e in r.entries:
        lines.append(f"{verb} {e.transform} (entry {e.entry_id}) in {r.checkpoint}")
        for f in e.files:
            lines.append(f"  {f.path}: {_HOW[f.how]}")
            lines += [f"    not restored: {_op_line(op)}" for op in f.skipped]
            if r.outcome == "dry-run" and f.new is not None and f.new != f.current:
                diff = unified(f.current or b"", f.new, f"a/{f.path}", f"b/{f.path}")
                lines.append(diff.rstrip("\n"))
    if r.outcome == "dry-run":
        lines.append("nothing was written")
    return "\n".join(lines)


def status_text(s: Status) -> str:
    """A status for people."""
    lines = [f"checkpoint: {s.checkpoint}"]
    if not s.applied:
        lines.append("applied: none")
    else:
        lines.append("applied:")
        for e in s.applied:
            line = f"  #{e.id} {e.transform} {_params(e.params)}".rstrip() + f"  ({e.time})"
            if e.target:
                line += f"  for {e.target.get('engine')} on {e.target.get('gpu')}"
                if e.target.get("profile"):
                    line += f" (profile {e.target['profile']})"
            lines.append(line)
    for e in s.unsettled:
        what = {"pending": "apply", "reverting": "revert"}.get(e.state, "reapply")
        lines.append(
            f"half-done: #{e.id} {e.transform} (interrupted {what}); run any patcher command "
            f"with write access to settle it, e.g. patcher status {shlex.quote(str(s.checkpoint))}"
        )
    lines += [f"note: {n}" for n in s.notes]
    if s.files:
        lines.append("files:")
        width = max(len(f.path) for f in s.files)
        for f in s.files:
            ids = ", ".join(f"#{i}" for i in f.entries)
            lines.append(f"  {f.path:<{width}}  {FILE_STATES[f.state]}  ({ids})")
    return "\n".join(lines)


def diff_text(d: CheckpointDiff) -> str:
    """A unified diff of every changed file."""
    if not d.files and not d.journalled:
        return (
            f"nothing applied: patcher has no journal for {d.checkpoint}, so it has no "
            f"originals to compare with (against the Hub: "
            f"patcher diff {shlex.quote(str(d.checkpoint))} --upstream)"
        )
    if not d.files:
        return f"no differences from the upstream originals in {d.checkpoint}"
    return "".join(f.unified for f in d.files).rstrip("\n")


def reading_note(engine: Engine | None) -> list[str]:
    """``note: vllm X was not read ...; Y's rules are assumed`` for an engine version patcher
    has not read (one line, first in every answer for it); nothing for a release read."""
    if engine is None:
        return []
    from patcher.engines.readings import assumed

    note = assumed(engine).note
    return [f"note: {note}"] if note else []


def engine_text(v: EngineView) -> list[str]:
    """What an engine derives, for people."""
    on = f" on {v.gpu.name} (compute capability {v.gpu.capability_text})" if v.gpu else ""
    said = [f"  answered by     {v.answered_by}"] if v.answered_by else reading_note(v.engine)
    lines = (
        [f"{v.engine}{on} derives:", *said]
        if v.answered_by
        else [*said, f"{v.engine}{on} derives:"]
    )
    lines.append(f"  max_model_len   {v.max_model_len.value}  ({v.max_model_len.reason})")
    lines.append(f"  kv_cache_dtype  {v.kv_cache_dtype.value}  ({v.kv_cache_dtype.reason})")
    dtype = "unknown" if v.dtype.value is None else v.dtype.value
    lines.append(f"  dtype           {dtype}  ({v.dtype.reason})")
    defaults = v.sampling_defaults.value
    shown = (
        "unknown"
        if defaults is None
        else ", ".join(f"{k}={json.dumps(x)}" for k, x in sorted(defaults.items())) or "none"
    )
    lines.append(f"  sampling        {shown}  ({v.sampling_defaults.reason})")
    cap = "none" if v.max_tokens_cap.value is None else v.max_tokens_cap.value
    lines.append(f"  max_tokens cap  {cap}  ({v.max_tokens_cap.reason})")
    eos = "unknown" if v.eos_token_id.value is None else json.dumps(v.eos_token_id.value)
    lines.append(f"  eos_token_id    {eos}  ({v.eos_token_id.reason})")
    quantization = "none" if v.quantization.value is None else v.quantization.value
    lines.append(f"  quantization    {quantization}  ({v.quantization.reason})")
    lines.append(f"  MLA             {'yes' if v.mla else 'no'}")
    if v.attention_backends is not None:
        accepted = ", ".join(v.attention_backends) or "none: the server will not start"
        lines.append(f"  MLA backends    {accepted}")
    elif v.mla and v.gpu is None:
        lines.append("  MLA backends    (give --gpu to check which backends accept the config)")
    if v.verdict == "unknown" and not v.unknowns and v.startup_errors:
        starts = (
            f"unknown: this release was not read; by the rules assumed, no "
            f"({_count(len(v.startup_errors), 'error')} below)"
        )
    elif v.verdict == "unknown":
        why = list(v.unknowns) or ["this release was not read (see the note)"]
        starts = "unknown: " + "; ".join(why)
    else:
        starts = f"no ({_count(len(v.startup_errors), 'error')} below)" if not v.starts else "yes"
    lines.append(f"  starts          {starts}")
    return lines


def check_text(r: CheckReport) -> str:
    """A check report for people."""
    lines = engine_text(r.engine) if r.engine is not None else []
    if r.asked and (r.engine is None or r.engine.answered_by is None):
        lines.insert(0, f"note: {r.asked}")
    if not r.findings:
        return "\n".join([*lines, f"no known problems in {r.checkpoint}"])
    lines.append(f"{_count(len(r.findings), 'known problem')} in {r.checkpoint}:")
    for f in r.findings:
        where = f"{f.file} {f.pointer}" if f.pointer else f.file
        lines.append(f"  [{f.code}] {where}: {f.message}")
        if f.command is not None:
            lines.append(f"      fix: {f.command}")
        lines += [f"       or: {alternative}" for alternative in f.alternatives]
        if f.note:
            lines.append(f"     note: {f.note}")
    return "\n".join(lines)


def overrides_text(r: Overrides) -> str:
    """Engine overrides for people."""
    note = [f"note: {r.reading.note}"] if r.reading is not None and r.reading.note else []
    if not r.entries:
        return "\n".join([*note, f"no transform is applied to {r.checkpoint}"])
    lines = [*note]
    if r.hf_overrides or r.flags:
        lines += ["vLLM equivalent of the edits that have one:", f"  {r.command}"]
    else:
        lines.append("none of the applied edits has a vLLM runtime equivalent")
    for e in r.entries:
        head = f"#{e.entry_id} {e.transform}: "
        if e.hf_overrides or e.flags:
            parts = [f"--hf-overrides '{json.dumps(e.hf_overrides)}'"] if e.hf_overrides else []
            lines.append(head + " ".join([*parts, *e.flags]))
        else:
            lines.append(head + "no runtime equivalent")
        lines += [f"    {u}" for u in e.uncovered]
        if e.note:
            lines.append(f"    note: {e.note}")
    return "\n".join(lines)


def kv_budget_text(b: KvBudget) -> str:
    """A KV budget for people."""
    divided = "divided by TP" if b.attention == "GQA" else "one latent per layer, not split by TP"
    note = b.reading.note if b.reading is not None else None
    lines = [
        *([f"note: answered by {b.asked}"] if b.asked and "own config code" in b.asked else []),
        *([f"note: {b.asked}"] if b.asked and "own config code" not in b.asked else []),
        *(f"note: {n}" for n in (note, b.unmodelled) if n),
        f"attention: {b.attention}, {b.layers} layers, {b.per_layer_elements} cached elements "
        f"per layer per token ({divided})",
        f"KV dtype: {b.kv_dtype}, {_count(b.element_bytes, 'byte')} per element",
        f"KV cache per token per GPU (TP={b.tp}): {b.bytes_per_token:,} bytes"
        + (
            f" (PP={b.pipeline_parallel}: the stage that fits the least)"
            if b.pipeline_parallel > 1
            else ""
        ),
        f"KV space given (--kv-cache-memory, no profiling): {b.kv_cache_memory_gib:.2f} GiB"
        if b.kv_cache_memory_gib is not None
        else f"per GPU: {b.memory_gib:.2f} GiB x {b.utilization} - weights "
        f"{b.weights_per_gpu_gib:.2f} GiB ({b.weights_source} / TP) - allowance "
        f"{b.allowance_gib:g} GiB",
        f"free for the KV cache per GPU: {b.free_bytes / GIB:.2f} GiB",
        f"KV cache: {b.pool_blocks or b.kv_cache_tokens // b.block_size:,} blocks of "
        f"{b.block_size} tokens ({b.kv_cache_tokens:,} tokens), one held back",
        "longest context that fits: any (every layer's KV is bounded by its window)"
        if b.sliding is not None and b.bytes_per_token == 0 and b.max_tokens >= 2**31 - 1
        else f"longest context that fits: {b.max_tokens:,} tokens",
    ]
    if b.sliding is not None:
        s = b.sliding
        lines.insert(
            3,
            f"sliding window: {s.layers} layers (of {b.layers}) keep {s.window:,} tokens plus "
            f"{s.in_flight_tokens:,} in flight ({s.in_flight_source}); the per-token figure "
            "is the full layers'",
        )
    if b.config_context is not None:
        verdict = "fits" if b.fits else "does NOT fit"
        lines.append(f"config context {b.config_context:,} tokens ({b.context_source}): {verdict}")
    if b.weights_warning:
        lines.append(f"warning: {b.weights_warning}")
    if b.free_bytes <= 0:
        lines.append("the weights alone exceed the usable memory of each GPU: use more GPUs (--tp)")
    command = b.command()
    if command:
        lines.append(f"to make the server start: {command}")
    return "\n".join(lines)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def upstream_text(d: UpstreamDiff) -> str:
    """An upstream diff for people."""
    where = "the local cache (HF_HUB_OFFLINE)" if d.offline else "the Hub"
    lines = [f"{d.checkpoint} against {d.repo} ({where})"]
    if not d.files:
        return lines[0] + ": identical"
    for f in d.files:
        lines.append(f"{f.path}:")
        for x in f.differences:
            what = {
                "added": "added",
                "removed": "removed",
                "changed": "changed",
                "local-only": "only here",
            }.get(x.kind, x.kind)
            head = f"  {what} {x.pointer or '(whole file)'}"
            if x.kind == "changed" and x.pointer:
                head += f": {_short(x.upstream)} -> {_short(x.current)}"
            why = f"by {x.transform} (#{x.entry})" if x.transform else f"UNEXPLAINED: {x.reason}"
            lines.append(f"{head}  [{why}]")
    total = sum(len(f.differences) for f in d.files)
    lines.append(f"{_count(total, 'difference')}, {d.unexplained} unexplained")
    return "\n".join(lines)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def reapply_text(r: ReapplyResult) -> str:
    """A reapply result for people."""
    if not r.entries:
        return f"nothing to do: no journalled file of {r.checkpoint} is back to its original"
    lines = [f"reapplied {e.transform} (entry {e.id})" for e in r.entries]
    return "\n".join([*lines, "  files patched again: " + ", ".join(r.files)])


def doctor_text(d: Diagnosis) -> str:
    """A log diagnosis for people."""
    if not d.recognised:
        if d.error is not None:
            return (
                f"not recognised: the root error in {d.log} is\n  {d.error}\n"
                f"  doctor names no fix for it ({d.cause})"
            )
        return (
            f"no known failure in {d.log}: give the whole log from the server's start, "
            "or report the last error line"
        )
    lines = [f"[{d.code}] {d.cause}", f"  error: {d.error}"]
    if d.template is not None:
        releases = ", ".join(d.template.releases)
        lines.append(f"  raised by: {d.template.engine} {releases}, {d.template.file}")
    if d.family is not None and d.family.answer == "none":
        lines.append("  no config fix")
    if d.engine_version:
        note = d.reading.note if d.reading is not None else None
        lines.append(f"  engine: vLLM {d.engine_version}" + (f" (note: {note})" if note else ""))
    lines += [f"  fix ({f.kind}): {f.text}" + (f"  ({f.note})" if f.note else "") for f in d.fixes]
    return "\n".join(lines)


def plan_text(p: Plan) -> str:
    """A plan for people."""
    head = "\n".join(
        [
            *reading_note(p.target.engine),
            f"target: {p.target.describe()}"
            + (f" (profile {p.target.profile})" if p.target.profile else ""),
        ]
    )
    said = [f"{o.key} {o.given} (the profile says {o.profile})" for o in p.target.overridden]
    head += "".join(f"\nnote: a flag overrides the profile: {line}" for line in said)
    if p.in_sync:
        return "\n".join([f"{head}\nin sync: nothing to do for {p.checkpoint}", *_launch(p)])
    lines = [head]
    if p.actions:
        lines.append(f"{_count(len(p.actions), 'action')} for {p.checkpoint}:")
    for a in p.actions:
        entry = f" (entry #{a.entry_id})" if a.entry_id is not None else ""
        lines.append(f"  {a.action} {a.name} {_params(a.params)}".rstrip() + entry)
        lines.append(f"      why: {a.reason}")
        for path, ops in a.undoes:
            lines += [f"      {path}: {_op_line(op)}" for op in ops]
    if p.drift:
        lines.append(
            f"not as patcher left them in {p.checkpoint} (sync refuses until they are settled):"
        )
        lines += [f"  {f.path}: {FILE_STATES[f.state]}" for f in p.drift]
    return "\n".join([*lines, *_launch(p)])


def _launch(p: Plan) -> list[str]:
    kept = [
        f"kept: {e.transform} (entry {e.id}), applied by hand; the target does not need it "
        "(--prune reverts it)"
        for e in p.manual
    ]
    return kept + _server(p)


def _server(p: Plan) -> list[str]:
    launch = p.launch
    if launch is None:
        return []
    lines = [f"context: {launch.context_note}"]
    if launch.problem:  # no go-ahead: no start command
        return [*lines, f"memory: {launch.memory_note}", f"does not start: {launch.problem}"]
    if launch.unknowns:
        lines.append(f"starts: unknown: {'; '.join(launch.unknowns)}")
    if launch.memory is None or launch.memory_note not in launch.context_note:
        lines.append(f"memory: {launch.memory_note}")
    if launch.passed:
        lines.append(
            f"your flags, passed as given (not judged): {shlex.join(mask_words(launch.passed))}"
        )
    lines.append("start the server with" + (" (after sync):" if p.actions else ":"))
    lines.append(f"  {launch.command}")
    return lines


def sync_text(r: SyncResult) -> str:
    """A sync result for people."""
    if r.plan.in_sync:
        return plan_text(r.plan)
    if r.dry_run:
        return plan_text(r.plan) + "\ndry run: nothing was written"
    done = [f"  {a.action} {a.name}: done" for a in r.plan.actions]
    launch = r.plan.launch
    start = [] if launch is None else ["start the server with:", f"  {launch.command}"]
    head = f"synced {r.plan.checkpoint} to {r.plan.target.describe()}:"
    return "\n".join([*reading_note(r.plan.target.engine), head, *done, *start])


def rebase_text(r: RebaseResult) -> str:
    """A rebase result for people."""
    if r.up_to_date:
        return (
            f"nothing to do: every journalled file of {r.checkpoint} is as patched (no new "
            "upstream version to rebase onto)"
        )
    if not r.transforms:
        return f"nothing to do: no transform is applied to {r.checkpoint}"
    lines = [f"rebased {r.checkpoint} onto its new upstream files:"]
    if r.carried_from is not None:
        lines[0] = f"carried the journal of {r.carried_from} to {r.checkpoint}:"
    for t in r.transforms:
        new = f" (entry #{t.new_entry})" if t.new_entry is not None else " (dropped)"
        lines.append(f"  {t.transform}: {t.outcome}{new}")
    if r.carried_from is not None:
        lines.append(
            f"old revision {r.carried_from.name}: "
            + ("reverted" if r.old_reverted else "left as it is (a running server may use it)")
        )
    return "\n".join(lines)


def run_text(r: RunPlan) -> str:
    """What ``patcher run`` worked out, before it starts the engine."""
    head = f"patcher: {r.target.describe()}: "
    if r.plan.actions:
        head += ("synced " if r.synced else "would sync ") + ", ".join(
            f"{a.action} {a.name}" for a in r.plan.actions
        )
    else:
        head += "checkpoint in sync"
    lines = [f"patcher: {line}" for line in reading_note(r.target.engine)] + [head]
    if r.plan.launch is not None:
        lines.append(f"patcher: context: {r.plan.launch.context_note}")
        if r.plan.launch.problem:
            lines.append(f"patcher: warning: {r.plan.launch.problem}")
        if r.plan.launch.unknowns:
            lines.append(f"patcher: starts: unknown: {'; '.join(r.plan.launch.unknowns)}")
    if r.asked:
        lines.append(f"patcher: {r.asked}")
    if r.command.unjudged:
        lines.append(
            f"patcher: not judged: {shlex.join(mask_words(r.command.unjudged))} (changes what "
            "the engine reads; patcher judged the checkpoint's own files)"
        )
    added = f" (added: {shlex.join(mask_words(r.added))})" if r.added else ""
    lines.append(f"patcher: starting {shlex.join(mask_words(r.argv))}{added}")
    return "\n".join(lines)


def forget_text(r: ForgetResult) -> str:
    """A forget result for people."""
    if not r.existed:
        return f"nothing to forget: {r.checkpoint} has no .patcher/"
    if r.dry_run:
        return (
            f"would remove {r.checkpoint}/.patcher/ ({r.bytes:,} bytes); dry run: nothing removed"
        )
    return f"removed {r.checkpoint}/.patcher/ ({r.bytes:,} bytes): patcher keeps nothing of it now"


def restore_text(r: RestoreResult) -> str:
    """A restore result for people."""
    if not r.files:
        return f"nothing to restore: every patched file of {r.checkpoint} is as patcher left it"
    verb = "would put back" if r.dry_run else "put back"
    lines = [f"{verb} the patched bytes of {len(r.files)} file(s) in {r.checkpoint}:"]
    for path, diff in r.files:
        lines.append(f"  {path}")
        if r.dry_run:
            lines.append(diff.rstrip())
    if r.dry_run:
        lines.append("dry run: nothing was written (the - lines are what it discards)")
    return "\n".join(lines)
