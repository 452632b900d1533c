"""The messages a module's source can raise or log, read with ``ast`` as templates: the literal
text and the holes (f-string fields, ``%`` and ``.format`` arguments, a message built in a
local first, each message appended to a list that is joined and raised, each string a helper
returns). A local is read where the raise is: each assignment that reaches it is a message of
its own (an ``if`` and its ``else``, two ``except`` handlers), with the additions (``+=``, ``msg =
msg + ...``) after it. tools/read_errors.py records them per release.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any

_LOG_CALLS = {"error", "critical", "exception", "fatal"}


def _hole(node: ast.expr) -> str:
    """A hole's name: the interpolated expression, as short source text."""
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


class _Messages:
    """Turns a message expression into template parts: literal, hole, literal, ..."""

    def __init__(self, function: ast.AST | None) -> None:
        self.locals: dict[str, list[ast.expr]] = {}
        # Each assignment to a local, in source order: (the statement, whether it adds).
        self.definitions: dict[str, list[tuple[ast.Assign | ast.AugAssign, bool]]] = {}
        self.parents: dict[int, ast.AST] = {}
        # The raise or log call being read: a local's value is what reaches it.
        self.at: ast.AST | None = None
        # A list a message is gathered in (``errors.append(f"...")``), then joined and raised.
        self.appended: dict[str, list[ast.expr]] = {}
        added: list[tuple[str, ast.AugAssign]] = []
        if function is not None:
            for node in ast.walk(function):
                for child in ast.iter_child_nodes(node):
                    self.parents[id(child)] = node
                appended = _method_call(node, "append")
                if appended is not None and isinstance(appended[0], ast.Name):
                    self.appended.setdefault(appended[0].id, []).append(appended[1])
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    if isinstance(target, ast.Name):
                        self.locals.setdefault(target.id, []).append(node.value)
                        self.definitions.setdefault(target.id, []).append((node, False))
                elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                    if isinstance(node.op, ast.Add):
                        added.append((node.target.id, node))
            # After the walk: it goes breadth first, so an addition at a function's top
            # level comes before the assignment in an if that it adds to.
            for name, addition in added:
                if name in self.locals:
                    self.locals[name].append(addition.value)
                    self.definitions[name].append((addition, True))
            for found in self.definitions.values():
                found.sort(key=lambda d: (d[0].lineno, d[0].col_offset))

    def _chain(self, node: ast.AST) -> list[ast.AST]:
        """``node`` and its ancestors up to the function."""
        chain = [node]
        while id(chain[-1]) in self.parents:
            chain.append(self.parents[id(chain[-1])])
        return chain

    @staticmethod
    def _field(parent: ast.AST, child: ast.AST) -> str:
        for name, value in ast.iter_fields(parent):
            if value is child or (isinstance(value, list) and any(v is child for v in value)):
                return name
        return ""

    def _split(self, a: ast.AST, b: ast.AST) -> tuple[ast.AST, ast.AST, ast.AST] | None:
        """The lowest node holding both, with the child of it on each one's path."""
        chain_a, chain_b = self._chain(a), self._chain(b)
        on_b = {id(n): i for i, n in enumerate(chain_b)}
        for i, node in enumerate(chain_a):
            if id(node) in on_b and i and on_b[id(node)]:
                return node, chain_a[i - 1], chain_b[on_b[id(node)] - 1]
        return None

    def _exclusive(self, a: ast.AST, b: ast.AST) -> bool:
        """Whether ``a`` and ``b`` are on branches of which one run takes only one: an if's
        body and its else, two except handlers, two match cases."""
        split = self._split(a, b)
        if split is None:
            return False
        common, child_a, child_b = split
        if isinstance(common, ast.If | ast.IfExp):
            return self._field(common, child_a) != self._field(common, child_b)
        if isinstance(common, ast.Try | ast.TryStar | ast.Match):
            return child_a is not child_b and isinstance(
                child_a, ast.ExceptHandler | ast.match_case
            )
        return False

    def _dominates(self, definition: ast.AST, at: ast.AST) -> bool:
        """Whether ``definition`` runs on every way to ``at``: it sits in a statement list
        that holds ``at`` (or an ancestor of it), before it."""
        parent = self.parents.get(id(definition))
        if parent is None:
            return False
        for node in self._chain(at)[:-1]:
            if self.parents.get(id(node)) is parent:
                return self._field(parent, definition) == self._field(parent, node)
        return False

    def values_of(self, name: str) -> list[list[ast.expr]]:
        """The values local ``name`` can hold where the message is read: one list per
        assignment that reaches it, each with the additions (``+=``) after it."""
        found = self.definitions.get(name, [])
        at = self.at
        line = getattr(at, "lineno", None)
        if at is None or line is None:
            reaching = found
        else:
            reaching = [d for d in found if d[0].lineno < line and not self._exclusive(d[0], at)]
            if not any(not adds for _, adds in reaching):
                reaching = found  # assigned only after (a loop): every value
            else:
                last = max(
                    (
                        i
                        for i, (d, adds) in enumerate(reaching)
                        if not adds and self._dominates(d, at)
                    ),
                    default=None,
                )
                if last is not None:
                    reaching = reaching[last:]
        alternatives: list[list[ast.expr]] = []
        for statement, adds in reaching:
            value = statement.value
            if not adds:
                alternatives.append([value])
            elif alternatives:
                for chosen in alternatives:
                    if not self._exclusive(statement, chosen[0]):
                        chosen.append(value)
        return alternatives

    def parts(self, node: ast.expr, depth: int = 0) -> list[str] | None:
        """Alternating literal and hole texts (even: literal, odd: hole), or None when the
        message is not text this reader can follow."""
        if depth > 6:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.JoinedStr):
            out: list[str] = [""]
            for value in node.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    out[-1] += value.value
                elif isinstance(value, ast.FormattedValue):
                    out += [_hole(value.value), ""]
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.parts(node.left, depth + 1), self.parts(node.right, depth + 1)
            if left is None and right is None:
                return None
            left = left if left is not None else ["", _hole(node.left), ""]
            right = right if right is not None else ["", _hole(node.right), ""]
            return [*left[:-1], left[-1] + right[0], *right[1:]]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            base = self.parts(node.left, depth + 1)
            args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            return None if base is None else _fill(base, [_hole(a) for a in args], "%")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
        ):
            base = self.parts(node.func.value, depth + 1)
            names = [_hole(a) for a in node.args] + [k.arg or "kw" for k in node.keywords]
            return None if base is None else _fill(base, names, "{")
        if isinstance(node, ast.Name) and node.id in self.locals:
            alternatives = self.values_of(node.id)
            return self.joined(alternatives[-1], depth) if alternatives else None
        if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Name):
            if node.func.id in {"str", "repr"}:
                return self.parts(node.args[0], depth + 1)
        if isinstance(node, ast.Tuple) and node.elts:
            # An exception raised with several arguments prints them as a tuple's repr:
            # RuntimeError('a ', 'b') -> "('a ', 'b')".
            tuple_out = ["("]
            for index, element in enumerate(node.elts):
                piece = self.parts(element, depth + 1)
                if piece is None:
                    piece = ["", _hole(element), ""]
                elif len(piece) == 1:
                    piece = ["'" + piece[0] + "'"]
                else:
                    piece = ["'" + piece[0], *piece[1:-1], piece[-1] + "'"]
                joint = ", " if index else ""
                tuple_out = [*tuple_out[:-1], tuple_out[-1] + joint + piece[0], *piece[1:]]
            tuple_out[-1] += ")"
            return tuple_out
        return None

    def _value_parts(self, value: ast.expr, depth: int) -> list[str] | None:
        """The parts of an assigned value, its own locals read where it is assigned
        (``msg = msg + "..."`` reads the ``msg`` before it)."""
        saved = self.at
        self.at = self.parents.get(id(value), saved)
        try:
            return self.parts(value, depth + 1)
        finally:
            self.at = saved

    def joined(self, values: list[ast.expr], depth: int = 0) -> list[str] | None:
        """The parts of a local built from ``values`` in turn (an assignment, then ``+=``)."""
        pieces = [self._value_parts(v, depth) for v in values]
        if pieces[0] is None:
            return None
        out = list(pieces[0])
        for more in pieces[1:]:
            more = more if more is not None else ["", "...", ""]
            out = [*out[:-1], out[-1] + more[0], *more[1:]]
        return out


def _split_literal(text: str, holes: Iterator[str], marker: str) -> list[str]:
    out = [""]
    i = 0
    while i < len(text):
        if marker == "%" and text[i] == "%" and i + 1 < len(text):
            if text[i + 1] == "%":
                out[-1] += "%"
                i += 2
                continue
            j = i + 1
            while j < len(text) and text[j] in "-+ #0123456789.()":
                j += 1
            if j < len(text) and text[j].isalpha():
                out += [next(holes, "arg"), ""]
                i = j + 1
                continue
        if marker == "{" and text[i] in "{}":
            if text[i : i + 2] in {"{{", "}}"}:
                out[-1] += text[i]
                i += 2
                continue
            end = text.find("}", i)
            if text[i] == "{" and end > 0:
                field = text[i + 1 : end].split(":")[0].split("!")[0]
                out += [field if field and not field.isdigit() else next(holes, "arg"), ""]
                i = end + 1
                continue
        out[-1] += text[i]
        i += 1
    return out


def _fill(parts: list[str], names: list[str], marker: str) -> list[str]:
    """``parts`` with each ``%s`` (marker ``%``) or ``{}`` (marker ``{``) of its literal text
    made a hole, named by the argument at that place."""
    holes = iter(names)
    out: list[str] = []
    for index, part in enumerate(parts):
        if index % 2:
            out += [part, ""] if out else ["", part, ""]
            continue
        split = _split_literal(part, holes, marker)
        out = [*out[:-1], (out[-1] if out else "") + split[0], *split[1:]]
    return out


def _exception_name(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _enclosing(tree: ast.Module) -> Iterator[tuple[ast.AST | None, ast.AST]]:
    """Each node with the function it is in (None at module level)."""

    def walk(node: ast.AST, function: ast.AST | None) -> Iterator[tuple[ast.AST | None, ast.AST]]:
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            yield function, child
            yield from walk(child, inner)

    yield from walk(tree, None)


def _callees(message: ast.expr, reader: _Messages) -> list[str]:
    """The functions whose result is the message: called in place, or into a local first."""
    values = reader.locals.get(message.id, []) if isinstance(message, ast.Name) else [message]
    names = []
    for value in values:
        if isinstance(value, ast.Call):
            func = value.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name is not None:
                names.append(name)
    return names


def _method_call(node: ast.AST, method: str) -> tuple[ast.expr, ast.expr] | None:
    """``X.method(arg)``'s ``X`` and ``arg``, or None for another expression."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == method
        and len(node.args) == 1
    ):
        return node.func.value, node.args[0]
    return None


def _joined(message: ast.expr) -> str | None:
    """The local list a message joins (``" ".join(errors)``, or that inside an f-string),
    or None."""
    if isinstance(message, ast.JoinedStr) and len(message.values) == 1:
        value = message.values[0]
        message = value.value if isinstance(value, ast.FormattedValue) else message
    joined = _method_call(message, "join")
    if joined is not None and isinstance(joined[0], ast.Constant):
        return joined[1].id if isinstance(joined[1], ast.Name) else None
    return None


def _worded(parts: list[str]) -> bool:
    """Whether a message's literal text has a word to find it by (``assert a, (x, y)`` has
    none: it prints only values)."""
    return re.search(r"[A-Za-z]{2}", "".join(parts[::2])) is not None


def _template(kind: str, parts: list[str], file: str, node: ast.AST) -> dict[str, Any]:
    """One message as the catalogue records it."""
    return {"exception": kind, "parts": parts, "file": file, "line": getattr(node, "lineno", 0)}


def templates_in(source: str, file: str) -> Iterator[dict[str, Any]]:
    """Each error message ``file``'s source can raise or log, as a template."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    readers: dict[int, _Messages] = {}
    built: dict[str, str] = {}  # a helper that builds a message -> what its caller raises
    for function, node in _enclosing(tree):
        message: ast.expr | None = None
        kind: str | None = None
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            raised = node.exc.args
            kind = _exception_name(node.exc)
            if len(raised) == 1:
                message = raised[0]
            elif not any(isinstance(a, ast.Starred) for a in raised):
                message = ast.Tuple(list(raised), ast.Load())
        elif isinstance(node, ast.Assert) and node.msg is not None:
            message, kind = node.msg, "AssertionError"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _LOG_CALLS
            and isinstance(node.func.value, ast.Name)
            and "log" in node.func.value.id.lower()
            and node.args
        ):
            message = node.args[0]
            if len(node.args) > 1:
                message = ast.BinOp(message, ast.Mod(), ast.Tuple(list(node.args[1:])))
            kind = "log." + node.func.attr
        if message is None or kind is None:
            continue
        reader = readers.setdefault(id(function), _Messages(function))
        reader.at = node
        gathered = _joined(message)
        if gathered is not None and gathered in reader.appended:
            # Each message appended to the list is one the raise can say (alone or joined).
            for item in reader.appended[gathered]:
                piece = reader.parts(item)
                if piece is not None and _worded(piece):
                    yield _template(kind, piece, file, item)
            continue
        if isinstance(message, ast.Name) and message.id in reader.locals:
            # A local assigned on several branches (an if and its else) or in several
            # handlers: each value that reaches the raise is a message of its own.
            alternatives = reader.values_of(message.id)
            if len(alternatives) > 1:
                for values in alternatives:
                    piece = reader.joined(values)
                    if piece is not None and _worded(piece):
                        yield _template(kind, piece, file, values[0])
                continue
        parts = reader.parts(message)
        if parts is None:
            for name in _callees(message, reader):
                built.setdefault(name, kind)
            continue
        if not _worded(parts):
            continue
        yield _template(kind, parts, file, node)
    # A message a helper of the module builds (``raise ValueError(_make_log_unsupported(b,
    # r))``): each string the helper returns, raised as the caller raises it.
    for helper in ast.walk(tree):
        if not isinstance(helper, ast.FunctionDef) or helper.name not in built:
            continue
        reader = _Messages(helper)
        for node in ast.walk(helper):
            if isinstance(node, ast.Return) and node.value is not None:
                reader.at = node
                parts = reader.parts(node.value)
                if parts is not None and _worded(parts):
                    yield _template(built[helper.name], parts, file, node)
