"""Version and feature guards: code that runs only on some torch versions, or as a fallback.

A deprecated or unknown API used under ``if torch.__version__ < ...``, ``if hasattr(dist,
"...")`` (or ``"..." not in dir(dist)``), ``is_torch_min_version(...)``, a
``packaging.version`` comparison, or inside a ``try`` whose handler catches
``ImportError``/``AttributeError``/``TypeError`` is the project supporting several torch
versions on purpose. So is a keyword whose support the file probes
(``"no_copy" in inspect.getfullargspec(dist.all_gather).args``, apex). Rules about API
validity stay silent there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import libcst as cst

from distlint.syntax.imports import dotted_name
from distlint.syntax.shapes import is_true
from distlint.syntax.walker import descendants, evaluated

# Names that read a version or probe a feature: ``torch.__version__``, ``TORCH_VERSION``,
# ``version.parse``, ``is_torch_min_version``, ``_TORCH_GREATER_EQUAL_2_1``,
# ``is_torch_greater_or_equal_than_1_13``, ``TORCH_2_0``, ``is_fsdp2_available``.
_VERSION_WORDS = re.compile(
    r"version|greater|less_than|lower_than|older|newer|at_least|torch_\d|min_torch"
    r"|_available|_supported",
    re.IGNORECASE,
)
# ``hasattr(dist, "x")``, ``getattr(...)``, ``"x" in dir(torch.distributed)`` (Samba, flash-attn)
_PROBES = frozenset({"hasattr", "getattr", "dir"})
_FALLBACK_ERRORS = frozenset(
    {"ImportError", "ModuleNotFoundError", "AttributeError", "TypeError", "NameError"}
)


def is_feature_guarded(ancestors: Sequence[cst.CSTNode]) -> bool:
    """Whether a node below ``ancestors`` (outermost first) runs under a version/feature guard,
    or never runs: in a test that is always skipped (``@pytest.mark.skipif(True, ...)``,
    ``@pytest.mark.skip``, ``@unittest.skip``), its decorators included, or one that runs only
    below some torch version (``@pytest.mark.skipif(torch.__version__ >= "2.1", ...)``,
    ``@RunIf(max_torch="2.1.0")``)."""
    return any(type(node) in _GUARD_KINDS and _guards(node) for node in ancestors)


_GUARD_KINDS = frozenset({cst.FunctionDef, cst.If, cst.IfExp, cst.Try})


class ByAncestor:
    """``test(ancestors)`` for the ancestor stacks of one walk (``ctx.parents``), remembered for
    each ancestor: rules ask at every call or attribute, and a statement in an ``elif`` chain
    has as many ancestors as there are branches before it, so reading them all each time was
    quadratic in the chain.

    ``test`` must be true of a stack when it is true of some ancestor alone or of some
    ancestor with its parent, and false otherwise (:func:`is_feature_guarded` reads each
    ancestor alone): it is asked of those windows of one or two only, each once. Results are
    kept by the id of the stack's last node, so the stacks must be paths from the root of one
    tree, which outlives this object.
    """

    def __init__(self, test: Callable[[Sequence[cst.CSTNode]], bool]) -> None:
        self._test = test
        self._known: dict[int, bool] = {}  # by id of a path's last node: the test of the path

    def __call__(self, ancestors: Sequence[cst.CSTNode]) -> bool:
        known = self._known
        start = len(ancestors)
        while start > 0 and id(ancestors[start - 1]) not in known:
            start -= 1
        found = known[id(ancestors[start - 1])] if start > 0 else False
        for i in range(start, len(ancestors)):
            found = found or self._test(ancestors[max(0, i - 1) : i + 1])
            known[id(ancestors[i])] = found
        return found


def _guards(node: cst.CSTNode) -> bool:
    """Whether code below ``node`` runs only under a guard or never (see above). Rules ask it
    of every ancestor of every call: through :class:`ByAncestor`, which asks each once (an
    elif chain of 600 branches read 180,000 tests), not a cache keyed by nodes, which would
    keep them, and their trees, alive after their file's check."""
    if type(node) is cst.FunctionDef:
        return any(
            _always_skips(d.decorator) or _skips_by_version(d.decorator) for d in node.decorators
        )
    if type(node) is cst.If or type(node) is cst.IfExp:
        return is_version_test(node.test)
    if type(node) is cst.Try:
        return any(_catches_fallback(h) for h in node.handlers)
    return False  # not one of the _GUARD_KINDS (callers pass those only)


def is_version_test(test: cst.BaseExpression) -> bool:
    """Whether a condition reads a version or probes for a feature."""
    for node in descendants(test):
        if isinstance(node, cst.Name) and _VERSION_WORDS.search(node.value):
            return True
        if isinstance(node, cst.Attribute) and _VERSION_WORDS.search(node.attr.value):
            return True
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value in _PROBES
        ):
            return True
    return False


def _catches_fallback(handler: cst.ExceptHandler) -> bool:
    caught = handler.type
    if caught is None:
        return False  # a bare except handles failures, not versions
    items = caught.elements if isinstance(caught, cst.Tuple) else (caught,)
    for item in items:
        value = item.value if isinstance(item, cst.Element) else item
        name = value.attr.value if isinstance(value, cst.Attribute) else getattr(value, "value", "")
        if name in _FALLBACK_ERRORS:
            return True
    return False


_SIGNATURE_READERS = frozenset({"getfullargspec", "getargspec", "signature"})
# A reader called: its name, then what may stand between a callee and its ``(`` (blanks and
# line breaks, backslash continuations, comments inside brackets). Each text between them
# splits one way only (a comment runs to its line's end), so a failed match does not
# backtrack.
_READER_CALLED = re.compile(
    r"(?:getfullargspec|getargspec|signature)(?:\s|\\[\r\n]|#[^\r\n]*(?=[\r\n]))*\("
)


def probed_keywords(module: cst.Module, source: str) -> frozenset[str]:
    """Keywords a file tests for in a signature (``"k" in inspect.signature(f).parameters``):
    the file passes them only where the installed torch accepts them. ``source``: the file's
    text; one that spells no call of a signature reader probes nothing (and its tree is not
    walked: the word alone is common in docstrings)."""
    found: set[str] = set()
    if not any(reader in source for reader in _SIGNATURE_READERS):
        return frozenset()
    if _READER_CALLED.search(source) is None:
        return frozenset()
    for node in descendants(module):
        if not isinstance(node, cst.Comparison) or not isinstance(node.left, cst.SimpleString):
            continue
        if not any(isinstance(t.operator, cst.In) for t in node.comparisons):
            continue
        reads_signature = any(
            isinstance(inner, cst.Call)
            and (
                (
                    isinstance(inner.func, cst.Attribute)
                    and inner.func.attr.value in _SIGNATURE_READERS
                )
                or (isinstance(inner.func, cst.Name) and inner.func.value in _SIGNATURE_READERS)
            )
            for t in node.comparisons
            for inner in (t.comparator, *descendants(t.comparator))
        )
        value = evaluated(node.left)
        if reads_signature and isinstance(value, str):
            found.add(value)
    return frozenset(found)


# Test decorators that skip a test on a condition: ``pytest.mark.skipif(cond)``,
# ``unittest.skipIf(cond)``; ``unittest.skipUnless(cond)`` runs it only when ``cond`` holds.
_SKIP_WHEN = frozenset({"skipif", "skipIf"})
_RUN_WHEN = frozenset({"skipUnless"})


def _skips_by_version(decorator: cst.BaseExpression) -> bool:
    """A test that runs only below some torch version: Lightning's ``@RunIf(max_torch=...)``,
    or a skip on newer versions (``@pytest.mark.skipif(torch.__version__ >= "2.1", ...)``,
    ``@unittest.skipUnless(torch.__version__ < "2.1", ...)``). Such a test never runs on the
    newer torch that changed the API, as the body of ``if <version test>:`` is skipped there.
    A lower bound (``min_torch``, a skip on older versions) guards nothing: the test runs on
    every newer torch."""
    if not isinstance(decorator, cst.Call):
        return False
    last = (dotted_name(decorator.func) or "").rsplit(".", 1)[-1]
    if last == "RunIf":
        return any(
            arg.keyword is not None and arg.keyword.value == "max_torch" for arg in decorator.args
        )
    if last not in _SKIP_WHEN and last not in _RUN_WHEN:
        return False
    first = decorator.args[0] if decorator.args else None
    if first is None or first.keyword is not None:
        return False
    newer = _true_on_newer(first.value)
    return newer is (last in _SKIP_WHEN)


def _true_on_newer(test: cst.BaseExpression) -> bool | None:
    """Whether a version comparison holds on the newer side (``torch.__version__ >= "2.1"``:
    True; ``< "2.1"``: False; ``not`` turns it); None for any other test."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _true_on_newer(test.expression)
        return None if inner is None else not inner
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    operator = type(target.operator)
    left, right = _reads_version(test.left), _reads_version(target.comparator)
    if left == right:
        return None  # neither or both sides read a version
    if operator in (cst.GreaterThan, cst.GreaterThanEqual):
        return left
    if operator in (cst.LessThan, cst.LessThanEqual):
        return right
    return None


def _reads_version(side: cst.BaseExpression) -> bool:
    """Whether one side of a comparison is the installed torch's version
    (``torch.__version__``, ``version.parse(torch.__version__)``, ``TORCH_VERSION``), not the
    version it is compared with (``version.parse("2.1")``)."""
    for node in descendants(side):
        if type(node) is cst.Attribute and node.attr.value == "__version__":
            return True
        if type(node) is cst.Name and _INSTALLED_VERSION.fullmatch(node.value):
            return True
    return False


_INSTALLED_VERSION = re.compile(r"_?(?:torch|pt)_?version", re.IGNORECASE)


def _always_skips(decorator: cst.BaseExpression) -> bool:
    """``pytest.mark.skip``/``unittest.skip`` (called or not), or ``skipif`` with a literal
    true condition (xformers: ``@pytest.mark.skipif(True, reason="broken on nightly")``)."""
    call = decorator if isinstance(decorator, cst.Call) else None
    func = call.func if call is not None else decorator
    name = dotted_name(func) or ""
    last = name.rsplit(".", 1)[-1]
    if last == "skip" and ("mark" in name or "unittest" in name):
        return True
    if last == "skipif" and call is not None and call.args and call.args[0].keyword is None:
        condition = call.args[0].value
        return is_true(condition)
    return False
