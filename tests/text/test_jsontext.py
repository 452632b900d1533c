from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patcher.text import jsontext, scanner
from patcher.text.pointers import join_pointer, split_pointer
from tests.strategies import document_texts, plain, trees

# The one function-scoped fixture here (skipper) holds a setting for all of a test's examples.
SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


SKIPPERS = ["c-extension", "python-scanner", "byte-patterns"]


@contextlib.contextmanager
def skipping_by(name: str) -> Iterator[None]:
    """Values off the path skipped one way: by the C extension (as installed), or without it,
    a small ASCII document by Python's scanner and every other one by the byte patterns."""
    saved = scanner.SMALL, scanner.native
    if name == "c-extension" and scanner.native is None:
        pytest.skip("the C extension is not built here (tests/text/test_scan.py says why)")
    if name != "c-extension":
        scanner.native = None
    if name == "byte-patterns":
        scanner.SMALL = -1
    try:
        yield
    finally:
        scanner.SMALL, scanner.native = saved


@pytest.fixture(params=SKIPPERS)
def skipper(request: pytest.FixtureRequest) -> Iterator[None]:
    """Run a test with the values off the path skipped each way (see ``skipping_by``)."""
    with skipping_by(request.param):
        yield


def pointers(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(pointer, kind of parent) for every member and element."""
    found: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for key, child in value.items():
            here = prefix + join_pointer([key])
            found.append((here, "object"))
            found += pointers(child, here)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            here = f"{prefix}/{index}"
            found.append((here, "array"))
            found += pointers(child, here)
    return found


def same(a: Any, b: Any) -> bool:
    return json.dumps(a) == json.dumps(b)


def unaffected(pointer: str, edited: str, parent_kind: str) -> bool:
    """Whether ``pointer`` keeps its raw text when ``edited`` changes (arrays shift indices)."""
    p, e = split_pointer(pointer), split_pointer(edited)
    n = min(len(p), len(e))
    if p[:n] == e[:n]:
        return False
    if parent_kind == "array" and p[: len(e) - 1] == e[:-1]:
        return False
    return True


def check_minimal(before: str, after: str, edited: str, kind: str) -> None:
    old = json.loads(before)
    for pointer, _ in pointers(old):
        if unaffected(pointer, edited, kind):
            assert jsontext.raw_value(after, pointer) == jsontext.raw_value(before, pointer)


@pytest.mark.usefixtures("skipper")
@SETTINGS
@given(st.data())
def test_remove_changes_only_the_member(data: st.DataObject) -> None:
    text = document_texts(data)
    doc = json.loads(text)
    pointer, kind = data.draw(st.sampled_from(pointers(doc)))
    after = jsontext.remove(text, pointer)
    expected = jsonpatch.apply_patch(doc, [{"op": "remove", "path": pointer}])
    assert same(json.loads(after), expected)
    check_minimal(text, after, pointer, kind)
    assert after.endswith(text[len(text.rstrip()) :])


@pytest.mark.usefixtures("skipper")
@SETTINGS
@given(st.data())
def test_replace_changes_only_the_value(data: st.DataObject) -> None:
    text = document_texts(data)
    doc = json.loads(text)
    pointer, kind = data.draw(st.sampled_from(pointers(doc)))
    value = plain(data.draw(trees))
    after = jsontext.replace(text, pointer, value)
    expected = jsonpatch.apply_patch(doc, [{"op": "replace", "path": pointer, "value": value}])
    assert same(json.loads(after), expected)
    check_minimal(text, after, pointer, "object")


@pytest.mark.usefixtures("skipper")
@SETTINGS
@given(st.data())
def test_add_member_or_element(data: st.DataObject) -> None:
    text = document_texts(data)
    doc = json.loads(text)
    containers = [("", doc)] + [
        (p, v)
        for p, _ in pointers(doc)
        if isinstance(v := jsonpatch.JsonPointer(p).resolve(doc), dict | list)
    ]
    parent, container = data.draw(st.sampled_from(containers))
    value = plain(data.draw(trees))
    if isinstance(container, dict):
        key = data.draw(st.text(max_size=5).filter(lambda k: k not in container))
        pointer = parent + join_pointer([key])
    else:
        index = data.draw(st.integers(0, len(container)))
        pointer = f"{parent}/{data.draw(st.sampled_from([str(index), '-']))}"
    after = jsontext.add(text, pointer, value)
    expected = jsonpatch.apply_patch(doc, [{"op": "add", "path": pointer, "value": value}])
    assert same(json.loads(after), expected)
    check_minimal(text, after, pointer, "array" if isinstance(container, list) else "object")


def test_new_member_takes_sibling_indentation() -> None:
    text = '{\n   "a": 1,\n   "b": {\n      "c": 2\n   }\n}'
    assert jsontext.add(text, "/b/d", [1]) == (
        '{\n   "a": 1,\n   "b": {\n      "c": 2,\n      "d": [\n         1\n      ]\n   }\n}'
    )


def test_odd_layouts_survive_an_unrelated_edit() -> None:
    text = (
        '{"x": 1,  "y": 1e30,\n'
        '     "z": 1000000000000000019884624838656, "u": "\\u00e9 é",\n'
        '  "w": 1.0, "k": "drop"}'
    )
    after = jsontext.remove(text, "/k")
    assert after == text.replace(', "k": "drop"', "")


def test_raw_values_are_reinserted_exactly() -> None:
    text = '{"a": 1e30, "b": 2}'
    removed = jsontext.remove(text, "/a")
    assert jsontext.add(removed, "/a", 1e30, raw="1e30") == '{"b": 2, "a": 1e30}'


def test_duplicate_keys_on_the_path_are_refused() -> None:
    with pytest.raises(jsontext.DuplicateKeyError) as caught:
        jsontext.remove('{"q": {"k": 1, "k": 2}}', "/q/k")
    assert caught.value.pointer == "/q" and caught.value.key == "k"


def test_pointer_escapes() -> None:
    text = '{"a/b": {"~": 1}}'
    assert jsontext.raw_value(text, "/a~1b/~0") == "1"
    assert split_pointer("/a~1b/~0") == ["a/b", "~"]


def _python_end(text: str) -> int | None:
    """Where Python's own JSON scanner ends the first value (None: it refuses it)."""
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return None
    return len(text[:end].encode("utf-8"))


@pytest.mark.usefixtures("skipper")
@SETTINGS
@given(st.data())
@pytest.mark.parametrize("run_after", [1, scanner.RUN_AFTER])
def test_the_fast_skipper_agrees_with_pythons_json(
    monkeypatch: pytest.MonkeyPatch, run_after: int, data: st.DataObject
) -> None:
    """Values off the edited path are skipped (in C, or by byte patterns), never parsed; on
    valid JSON they must end exactly where Python's scanner ends, and on every mangled text
    they must refuse what Python refuses (and accept what it accepts, NaN included). The
    members of a deeper container go one at a time, then (past ``run_after``) in runs."""
    monkeypatch.setattr(scanner, "RUN_AFTER", run_after)
    text = document_texts(data)
    if data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(text)))
        junk = data.draw(
            st.sampled_from(["", ",", "]", "}", "\x01", "NaN", '"', "\\", "1.", "-", "[", "{"])
        )
        cut = data.draw(st.integers(0, 3))
        text = text[:at] + junk + text[at + cut :]
    raw = text.encode("utf-8", "surrogatepass")
    expected = _python_end(text) if text.encode("utf-8", "surrogatepass") == raw else None
    try:
        end = scanner.value_end(raw, 0)
    except scanner.JsonSyntaxError:
        end = None
    assert end == expected


@SETTINGS
@given(st.data())
def test_small_documents_are_judged_as_large_ones(data: st.DataObject) -> None:
    """A small ASCII document's values are skipped by Python's scanner, a larger one's by the
    byte patterns, and either by the C extension where it is built: the same text must be
    accepted or refused alike, at the same place, with the same words."""
    text = document_texts(data)
    at = data.draw(st.integers(0, len(text)))
    junk = data.draw(st.sampled_from(["", ",", "]", "}", "\x01", "NaN", '"', "1.", "-", "[", "{"]))
    text = text[:at] + junk + text[at + data.draw(st.integers(0, 3)) :]
    pointer = data.draw(st.sampled_from(["", "/a", "/0", "/a/b"]))

    def outcome() -> tuple[int, int, str] | None:
        try:
            jsontext.JsonText(text.encode("utf-8", "surrogatepass")).prepare([pointer])
        except scanner.JsonSyntaxError as exc:
            return exc.line, exc.column, exc.problem
        except (jsontext.DuplicateKeyError, RecursionError):
            return (0, 0, "refused")
        return None

    outcomes = []
    for name in SKIPPERS:
        if name == "c-extension" and scanner.native is None:
            continue
        with skipping_by(name):
            outcomes.append(outcome())
    assert outcomes.count(outcomes[0]) == len(outcomes)


def test_a_config_edit_compiles_no_byte_pattern() -> None:
    """Editing a config.json-sized file costs no compile of the strict byte patterns (about
    8 ms of a command's start), yet still refuses a broken value off the edited path."""
    config = {"architectures": ["X"], "quantization_config": {"kv_cache_scheme": {"bits": 8}}}
    text = json.dumps({**config, "layers": [{"a": [1, 2]}] * 50, "k": 1}, indent=2)
    scanner._flat_value.cache_clear()
    scanner._run.cache_clear()
    after = jsontext.remove(text, "/quantization_config/kv_cache_scheme")
    assert "kv_cache_scheme" not in after
    assert scanner._flat_value.cache_info().currsize == 0
    assert scanner._run.cache_info().currsize == 0
    broken = text.replace("1,", "1 ", 1)  # in layers/0/a, off the edited path
    with pytest.raises(scanner.JsonSyntaxError, match="Expecting ',' delimiter"):
        jsontext.remove(broken, "/quantization_config/kv_cache_scheme")


def test_syntax_errors_name_the_line_and_character_column() -> None:
    text = '{\n  "é": [1, 2,, 3]\n}'
    with pytest.raises(scanner.JsonSyntaxError) as caught:
        jsontext.JsonText(text).prepare([])
    with pytest.raises(json.JSONDecodeError) as python:
        json.loads(text)
    assert (caught.value.line, caught.value.column) == (python.value.lineno, python.value.colno)
    assert (caught.value.line, caught.value.column, caught.value.problem) == (
        2,
        14,
        "Expecting value",
    )


def test_nan_is_accepted_as_pythons_json_accepts_it() -> None:
    text = '{"a": NaN, "b": [Infinity, {"c": -Infinity}], "k": 1}'
    assert jsontext.replace(text, "/k", 2) == text.replace('"k": 1', '"k": 2')


@pytest.mark.usefixtures("skipper")
def test_check_utf8_names_the_first_bad_byte() -> None:
    good = ("Ġ" * 300_000).encode()
    assert scanner.check_utf8(good) is None
    assert scanner.check_utf8(good[:-1]) == len(good) - 2
    assert scanner.check_utf8(good[:400_001] + b"\xff" + good[400_001:]) == 400_000


def test_a_scan_is_kept_across_edits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large value beside the edited paths is skipped once, however many edits follow."""
    vocab = {f"t{i}": i for i in range(20_000)}
    doc = jsontext.JsonText(json.dumps({"model": {"vocab": vocab, "a": 1, "b": [1]}}, indent=2))
    calls: list[int] = []
    real = scanner.value_end

    def counting(data: bytes, start: int) -> int:
        calls.append(real(data, start) - start)
        return calls[-1] + start

    monkeypatch.setattr(jsontext, "value_end", counting)
    doc.prepare(["/model/a", "/model/b", "/model/c"])
    doc.replace("/model/a", 2)
    doc.add("/model/b/-", 3)
    doc.add("/model/c", {"x": 1})
    doc.remove("/model/a")
    large = [n for n in calls if n > 100_000]
    assert len(large) == 1
    assert json.loads(doc.text)["model"] == {"vocab": vocab, "b": [1, 3], "c": {"x": 1}}


@pytest.mark.usefixtures("skipper")
@pytest.mark.parametrize("depth", [100, 550, 5000])
def test_every_scanner_takes_any_depth_off_the_edited_path(depth: int) -> None:
    """The C half, Python's scanner and the byte patterns agree at every depth: a config
    with an untouched member nested deep (non-ASCII, or small ASCII) is edited alike, where
    the pure-Python path used to refuse past ~500 levels and the C half did not."""
    deep = "[" * depth + "{}" + "]" * depth
    for name in ("\u00e9", "e"):
        text = '{"torch_dtype": "bfloat16", "name": "' + name + '", "deep": ' + deep + "}"
        edited = jsontext.replace(text, "/torch_dtype", "float16")
        assert edited == text.replace("bfloat16", "float16")
        broken = text[:-3] + "}"  # one closing bracket short, deep inside
        with pytest.raises((scanner.JsonSyntaxError, RecursionError)):
            jsontext.replace(broken, "/torch_dtype", "float16")
