"""DL501: keywords a torch API does not take, judged against every release of the project's
torch range.

Facts come from data shipped with distlint, never from an imported torch: the signatures in
``distlint/knowledge/data/torch-tables.json``, generated from torch by
``scripts/gen_torch_tables.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from distlint.findings import Applicability, Fix, FixAvailability, Severity
from distlint.knowledge.torch_tables import Signature, closest, describe_versions, version_advice
from distlint.rules.api._tables import TableRule, passes_no_keyword
from distlint.syntax.guards import ByAncestor, is_feature_guarded, probed_keywords
from distlint.syntax.imports import dotted_name
from distlint.syntax.walker import descendants, parameters

_PARTIAL = frozenset({"functools.partial"})
# torch.compile's keywords that nn.Module.compile(*args, **kwargs) forwards.
_MODULE_COMPILE = "torch.compile"

# Extra advice for keywords that people expect to exist: on torch 2.13.0 each raises TypeError
# (re-observed by tests/proof/test_proof_dl5xx.py, DL501).
_HINTS: dict[tuple[str, str], str] = {
    ("torch.distributed.init_process_group", "debug"): (
        "To debug collectives, set `TORCH_DISTRIBUTED_DEBUG=DETAIL` in the environment before "
        "`torch.distributed` is imported, or call "
        "`dist.set_debug_level(dist.DebugLevel.DETAIL)`."
    ),
}
_NO_SUGGESTION = frozenset({("torch.distributed.init_process_group", "debug")})


class UnknownKeywordArgument(TableRule):
    code = "DL501"
    name = "unknown-keyword-argument"
    severity = Severity.ERROR
    summary = "A torch API is called with a keyword argument it does not accept (TypeError)."
    fix_availability = FixAvailability.SOMETIMES
    tags = ("correctness", "api")
    precision = "very-high"
    reads_facts = True  # the project's own ``compile`` methods (_own_compile_methods)

    _probes: frozenset[str] | None = None
    _guarded: ByAncestor | None = None

    def _feature_guarded(self) -> bool:
        """``is_feature_guarded(self.ctx.parents)``, remembered by ancestor (asked at every
        call of an API with a signature)."""
        if self._guarded is None:
            self._guarded = ByAncestor(is_feature_guarded)
        return self._guarded(self.ctx.parents)

    def _probed(self) -> frozenset[str]:
        """Keywords this file probes torch's signatures for (computed once, when needed)."""
        if self._probes is None:
            self._probes = probed_keywords(self.ctx.module, self.ctx.source)
        return self._probes

    def visit_Call(self, node: cst.Call) -> None:
        if passes_no_keyword(node):
            return
        name = self.ctx.resolve(node.func)
        args: Sequence[cst.Arg] = node.args
        callee = node.func
        if name in _PARTIAL and node.args and node.args[0].keyword is None:
            # functools.partial(api, kw=...): the keywords reach api when the partial is called
            callee = node.args[0].value
            name = self.ctx.resolve(callee)
            args = node.args[1:]
        found = self._signatures(name)
        if not found:
            self._check_module_compile(node)
            return
        head = dotted_name(callee)
        if head is not None and self.ctx.bound_several_ways(head.split(".", 1)[0]):
            return  # `DDP` from apex when installed, else from torch: its keywords may be apex's
        self._check(callee, found, args)

    def _signatures(self, name: str | None) -> list[tuple[str, Signature]]:
        """(release, signature) for each release of the range that has the API."""
        return [(t.version, sig) for t in self.tables if (sig := t.signature(name)) is not None]

    def _check(
        self,
        callee: cst.BaseExpression,
        found: list[tuple[str, Signature]],
        args: Sequence[cst.Arg],
        via_method: bool = False,
    ) -> None:
        if all(sig.var_keyword for _, sig in found) or self._feature_guarded():
            return  # a keyword of another torch version, used on purpose under a guard
        spelled = ""  # the callee's code, generated for a report only
        for arg in args:
            if arg.keyword is None:
                continue  # positional, *args or **kwargs (keys we cannot see)
            keyword = arg.keyword.value
            if keyword in self._probed():
                continue
            rejecting = [(v, sig) for v, sig in found if not sig.accepts_keyword(keyword)]
            if not rejecting:
                continue
            spelled = spelled or self.ctx.module.code_for_node(callee)
            if len(rejecting) < len(found):
                accepting = [v for v, sig in found if sig.accepts_keyword(keyword)]
                self._report_some(arg.keyword, rejecting, accepting, keyword, spelled, via_method)
            else:
                self._report(arg.keyword, rejecting, keyword, spelled, via_method)

    @staticmethod
    def _what(signature: Signature, spelled: str, via_method: bool) -> str:
        if via_method or spelled == signature.name:
            return f"`{spelled}`"
        return f"`{spelled}` (`{signature.name}`)"

    def _report_some(
        self,
        node: cst.Name,
        rejecting: list[tuple[str, Signature]],
        accepting: list[str],
        keyword: str,
        spelled: str,
        via_method: bool,
    ) -> None:
        """A keyword some releases of the project's range accept and others reject."""
        signature = rejecting[-1][1]
        error = (
            f"{signature.error_name}() got some positional-only arguments passed as keyword "
            f"arguments: {keyword!r}"
            if keyword in signature.positional_only
            else signature.unexpected_keyword_message(keyword)
        )
        self.report(
            node,
            f"{self._what(signature, spelled, via_method)} takes keyword `{keyword}` only in "
            f"torch {describe_versions(accepting)}: on torch "
            f"{describe_versions([v for v, _ in rejecting])}, which the project supports, the "
            f"call raises `TypeError: {error}`. "
            + version_advice(accepting, [v for v, _ in rejecting]),
            severity=Severity.WARNING,
        )

    def _report(
        self,
        node: cst.Name,
        rejecting: list[tuple[str, Signature]],
        keyword: str,
        spelled: str,
        via_method: bool,
    ) -> None:
        signature = rejecting[-1][1]
        version = describe_versions([v for v, _ in rejecting])
        what = self._what(signature, spelled, via_method)
        if keyword in signature.positional_only:
            self.report(
                node,
                f"{what} takes `{keyword}` only by position in torch {version}: the call raises "
                f"`TypeError: {signature.error_name}() got some positional-only arguments "
                f"passed as keyword arguments: {keyword!r}`. Pass it positionally.",
            )
            return
        public = [k for k in signature.keywords if not k.startswith("_")]
        key = (signature.name, keyword)
        suggestion = None if key in _NO_SUGGESTION else closest(keyword, public)
        if suggestion is not None and not all(
            sig.accepts_keyword(suggestion) for _, sig in rejecting
        ):
            suggestion = None  # not a keyword of every release of the range
        hint = f" Did you mean `{suggestion}`?" if suggestion else ""
        extra = f" {_HINTS[key]}" if key in _HINTS else ""
        self.report(
            node,
            f"{what} has no keyword `{keyword}` in torch {version}: the call raises "
            f"`TypeError: {signature.unexpected_keyword_message(keyword)}`.{hint}{extra}",
            fix=Fix(f"Use keyword {suggestion!r}", (), Applicability.UNSAFE)
            if suggestion
            else None,
            fix_nodes=((node, suggestion),) if suggestion else (),
        )

    def _check_module_compile(self, node: cst.Call) -> None:
        """``model.compile(...)``: nn.Module.compile forwards its keywords to torch.compile."""
        func = node.func
        if self.ctx.module_compile_receiver(node) is None:
            return
        found = self._signatures(_MODULE_COMPILE)
        if not found or found[-1][1].var_keyword:
            return
        signature = found[-1][1]
        keywords = [arg.keyword.value for arg in node.args if arg.keyword is not None]
        known = set(signature.keywords) - {"model"}
        unknown = [k for k in keywords if k not in signature.keywords]
        if not unknown:
            return
        # Another object's .compile(...) (a regex, a Keras-style model) shares no keywords with
        # torch.compile; only report when the call is recognisably torch.compile's.
        public = [k for k in signature.keywords if not k.startswith("_")]
        if not (set(keywords) & known) and not all(closest(k, public) for k in unknown):
            return
        if any(set(unknown) <= params for params in self._own_compile_methods()):
            return  # a project class's own compile(..., compile_model=True) (timm's tasks)
        self._check(func, found, node.args, via_method=True)

    def _own_compile_methods(self) -> list[set[str]]:
        """Parameter names of the ``compile`` methods the project's classes define (this file's,
        and with project facts every module's)."""
        found = [
            {p.name.value for p in parameters(node.params)}
            for node in descendants(self.ctx.module)
            if type(node) is cst.FunctionDef and node.name.value == "compile"
        ]
        facts = self.ctx.facts
        if facts is not None:
            found += [
                set(summary.params)
                for summary in facts.functions.values()
                if summary.name == "compile" and summary.class_id is not None
            ]
        return found
