"""Phase 2: join the per-file summaries into project facts.

Symbolic values from the summaries (see :mod:`.model`) are evaluated here against every
module: names through imports and re-exports, ``self.sub`` through the attributes a class
sets, instances to their class's ``forward``. From that come the call graph, the compile
roots (every form), the region of each function (the roots that reach it by calls, cut at
``torch.compiler.disable``), and which project functions return a rank.

Unresolvable calls are recorded as unknown: they add no edge, they are never guessed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from distlint.findings import Span
from distlint.knowledge.module_factories import builds_module
from distlint.semantic.bindings import (
    LITERAL_TYPES,
    STARRED,
    bind,
    decided_side,
    forward_arguments,
)
from distlint.semantic.collectives import BUFFERED_MODULES, CONVERTS_BATCH_NORM
from distlint.semantic.compile_sites import CompileSite, RootInfo, compiles
from distlint.semantic.model import (
    MODULE_CODE,
    ClassSummary,
    Effect,
    FunctionSummary,
    ModuleSummary,
)
from distlint.semantic.packs import knowledge
from distlint.semantic.regions import DISABLE_FUNCTIONS, UNTRACED_DECORATORS, Sides
from distlint.semantic.regions_model import Region
from distlint.semantic.values import Options, Value
from distlint.syntax.spans import NOWHERE, SourceLookup, resolve_spans

# Abstract values: ("func", id) ("class", id) ("inst", class id) ("ext", dotted)
# ("seqv", (values...)) ("partialv", (compilers...), options) ("super", class id)
AVal = tuple
_MAX_DEPTH = 24
# the cycle guard of ``ProjectFacts.evaluate``: a value being evaluated reads as nothing
_PENDING: frozenset[AVal] = frozenset({("<pending>",)})
_DISABLE_DEPTH = 3  # call levels below a project decorator searched for a disable call


@dataclass
class ProjectFacts:
    """Everything the linker learned about the checked files (see the module docstring)."""

    modules: dict[str, ModuleSummary]
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    function_module: dict[str, ModuleSummary] = field(default_factory=dict)
    edges: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unknown_calls: dict[str, int] = field(default_factory=dict)
    roots: list[RootInfo] = field(default_factory=list)
    # compile sites whose compiled code is not known: (path, located site, why)
    unresolved: list[tuple[str, object, str]] = field(default_factory=list)
    regions: dict[str, tuple[RootInfo, ...]] = field(default_factory=dict)
    # functions run under a CUDA graph capture: where (path, span) the capture starts
    captures: dict[str, tuple[str, Span]] = field(default_factory=dict)
    # attribute writes of every module, summed (see ModuleSummary.attribute_writes)
    attribute_writes: dict[str, int] = field(default_factory=dict)
    # functions that run whenever some fullgraph root runs / some root runs; see _certain
    certain: set[str] = field(default_factory=set)
    always: set[str] = field(default_factory=set)
    # display path -> ordinal of an ``if`` among the file's ``if``s -> the only side compiled
    # calls take (True: the body); see _decided_branches
    decided_branches: dict[str, dict[int, bool]] = field(default_factory=dict)
    rank_functions: set[str] = field(default_factory=set)
    rank_attributes: frozenset[str] = frozenset()
    wrappers: frozenset[str] = frozenset()
    sources: SourceLookup | None = None  # display path -> text, to measure lazy spans
    # display path -> lazily located node (its key) -> the span measured: all that was read
    # of a file's text (``engine.project_reuse``)
    measured: dict[str, dict[tuple, Span]] = field(default_factory=dict)
    derived: dict[str, object] = field(default_factory=dict)  # analyses shared by rules

    def resolve(self, items: Iterable[object]) -> None:
        """Measure lazily located nodes (see :mod:`distlint.syntax.spans`); a file parsed
        for that is kept, so measuring several of its nodes one by one parses it once. What
        is measured is noted in ``measured``."""
        for item in resolve_spans(items, self.sources, self._parsed):
            if item.key is not None and item.span is not None:
                self.measured.setdefault(item.path, {})[item.key] = item.span

    # -- queries -------------------------------------------------------------------------------

    def region_of(self, function_id: str) -> Region | None:
        roots = self.regions.get(function_id)
        if not roots:
            return None
        direct = any(r.target == function_id for r in roots)
        return Region(
            roots,
            direct,
            certain=function_id in self.certain,
            always=function_id in self.always,
        )

    def capture_of(self, function_id: str) -> tuple[str, Span] | None:
        """Where a CUDA graph capture that runs this function (by calls) starts, if any."""
        return self.captures.get(function_id)

    def has_captures(self, module_key: str) -> bool:
        """Whether a function of this module runs under a CUDA graph capture started elsewhere."""
        return module_key in self._modules_with_captures

    def has_regions(self, module_key: str) -> bool:
        """Whether this module holds compiled code or compiles some (a compile root's site):
        region rules read both the compiled functions and the code that calls them."""
        return module_key in self._modules_with_regions

    def is_rank_function(self, dotted: str) -> bool:
        """Whether a resolved call target is a project function returning a rank value."""
        return any(
            v[0] == "func" and v[1] in self.rank_functions for v in self.resolve_global(dotted)
        )

    def compiling_sides_of(self, dotted: str) -> Sides | None:
        """What a call of the project function ``dotted`` tells of ``is_compiling()`` where
        it holds and where it fails (see ``regions.predicate_sides``); None: no such function."""
        if dotted.rpartition(".")[2] not in self.predicate_names():
            return None
        found = set()
        for item in self.resolve_global(dotted):
            summary = self.functions.get(item[1]) if item[0] == "func" else None
            if summary is None or summary.compiling_sides in (None, (None, None)):
                return None
            found.add(summary.compiling_sides)
        return found.pop() if len(found) == 1 else None

    def predicate_names(self) -> set[str]:
        """The names of project functions that test ``is_compiling()`` (see
        ``compiling_sides_of``): a file naming none of them needs no look-up."""
        if self._predicate_names is None:
            self._predicate_names = {
                summary.name
                for summary in self.functions.values()
                if summary.compiling_sides is not None and summary.compiling_sides != (None, None)
            }
        return self._predicate_names

    def call_targets(self, value: Value, scope_id: str) -> tuple[str, ...]:
        """Project functions a call of ``value`` (from function ``scope_id``) runs."""
        summary = self.functions.get(scope_id)
        items = self.evaluate(value, summary.class_id if summary is not None else None)
        if not items:
            return ()
        # Kept by the evaluation, not the value: what runs depends on nothing else (the
        # functions it names, the classes' methods along ``mro``). ``evaluate`` gives one
        # object per distinct result, so an equal key is the same object, iterated alike
        # (the same order of targets) and hashed once. Torch: 297,000 asks, 64,000 distinct
        # (value, class) pairs, 20,000 evaluations. Kept once settled (see ``_unsettled``).
        known = self._targets.get(items)
        if known is None:
            unsettled = self._unsettled
            known = self._callable_functions(items)
            if self._unsettled == unsettled:
                self._targets[items] = known
        return known

    def _callable_functions(self, items: frozenset[AVal]) -> tuple[str, ...]:
        found: list[str] = []
        for item in items:
            # ``self.blocks(x)`` with ``self.blocks = nn.Sequential(*[Block() ...])``: calling
            # the container runs each element's forward
            for element in item[1] if item[0] == "seqv" else (item,):
                target = self._callable_function(element)
                if target is not None and target not in found:
                    found.append(target)
        return tuple(found)

    def is_disabled(self, function_id: str) -> bool:
        """Cut out of compiled regions: decorated with ``torch.compiler.disable`` (and the
        like), or with a project decorator that hands functions to it (see
        ``_disabling_decorator``)."""
        if self._decorated_by(function_id, DISABLE_FUNCTIONS):
            return True
        summary = self.functions.get(function_id)
        if summary is None or not summary.decorators:
            return False
        return any(
            v[0] == "func" and self._disabling_decorator(v[1])
            for d in summary.decorators
            for v in self.evaluate(d, None)
        )

    def _disabling_decorator(self, function_id: str) -> bool:
        """Whether a project function used as a decorator (or a decorator factory, with the
        functions defined inside it) calls ``torch.compiler.disable`` (or the like), itself or
        through the project functions it calls (a few levels): TransformerEngine's
        ``@no_torch_dynamo()``, and its ``@no_torch_dynamo(when=...)``, which disables the
        calls its predicate picks. Which calls Dynamo then traces is not known, so none of
        the function is claimed compiled."""
        key = ("<disabling>", function_id)
        known = self._cache.get(key)
        if known is not None:
            return bool(known)
        self._cache[key] = False  # cycle guard
        found = False
        inner = f"{function_id}.<locals>."
        frontier = [function_id, *(f for f in self.functions if f.startswith(inner))]
        seen = set(frontier)
        for _ in range(_DISABLE_DEPTH):
            following: list[str] = []
            for current in frontier:
                summary = self.functions.get(current)
                if summary is None:
                    continue
                if any(
                    v[0] == "ext" and v[1] in DISABLE_FUNCTIONS
                    for call in summary.calls
                    if call != ("?",)
                    for v in self.evaluate(call, self._class_of(current))
                ):
                    found = True
                    break
                following.extend(c for c in self.edges.get(current, ()) if c not in seen)
                seen.update(following)
            if found or not following:
                break
            frontier = following
        self._cache[key] = found
        return found

    def is_opaque(self, function_id: str) -> bool:
        """A custom op's body (``@torch.library.custom_op``) or an ``assume_constant_result``
        function: Dynamo never traces it."""
        return self._decorated_by(function_id, UNTRACED_DECORATORS)

    def _decorated_by(self, function_id: str, decorators: frozenset[str]) -> bool:
        summary = self.functions.get(function_id)
        if summary is None:
            return False
        return any(
            v[0] == "ext" and v[1] in decorators
            for d in summary.decorators
            for v in self.evaluate(d, None)
        )

    def dynamo_flags_for(self, function_id: str) -> dict[str, object]:
        """Module-level dynamo config (by setting name) of the function's module and its
        roots' compiled functions' modules."""
        flags: dict[str, object] = {}
        modules = [self.function_module.get(function_id)]
        for root in self.regions.get(function_id, ()):
            modules.append(self.function_module.get(root.target))
        for module in modules:
            if module is not None:
                flags.update(module.dynamo_flags)
        return flags

    # -- name resolution -----------------------------------------------------------------------

    def resolve_global(self, dotted: str, depth: int = 0) -> frozenset[AVal]:
        """What a fully qualified name means in the project (re-exports followed)."""
        if depth > _MAX_DEPTH:
            self._unsettled += 1  # cut off here, not at a lower depth
            return frozenset()
        export = self._exports.get(dotted)
        if export is None:
            export = self._exports[dotted] = self._export_of(dotted)
        if isinstance(export, frozenset):
            return export
        value, rest = export
        found = self.evaluate(value, None, depth + 1)
        for attr in rest:
            found = self._attribute(found, attr, depth + 1)
        return found

    def _export_of(self, dotted: str) -> tuple[Value, tuple[str, ...]] | frozenset[AVal]:
        """The module export a fully qualified name starts with and the attributes read from
        it after; or, when it names none, what it means. Kept per name: it reads only the
        modules' names and exports, which linking never changes (torch: 23,000 look-ups, 11,000
        names)."""
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = self.modules.get(".".join(parts[:cut]))
            if module is None:
                continue
            value = module.exports.get(parts[cut])
            if value is None:
                break
            return value, tuple(parts[cut + 1 :])
        if dotted in self.modules:
            return frozenset()
        return frozenset({("ext", dotted)})

    def evaluate(
        self, value: Value, cls: str | None, depth: int = 0, scope: str | None = None
    ) -> frozenset[AVal]:
        """The abstract values a symbolic value may hold; ``cls`` is the class of ``self``."""
        if depth > _MAX_DEPTH or not value:
            if value:
                self._unsettled += 1  # cut off here, not at a lower depth
            return frozenset()
        key = (value, cls)  # a tuple's hash is not kept: one look-up sets the guard too
        cache = self._cache
        size = len(cache)
        cached = cache.setdefault(key, _PENDING)  # the cycle guard, if not known
        if len(cache) == size:  # known, or being evaluated
            if cached is _PENDING:
                self._unsettled += 1  # being evaluated: nothing yet, the whole value later
                return frozenset()
            return cached
        result = self._evaluate(value, cls, depth)
        # one object per distinct result: torch's 97,000 evaluations give 32,000 (13 MiB)
        result = self._results.setdefault(result, result)
        cache[key] = result
        return result

    def _evaluate(self, value: Value, cls: str | None, depth: int) -> frozenset[AVal]:
        kind = value[0]
        if kind == "g":
            return self.resolve_global(value[1], depth + 1)
        if kind == "f":
            ident = value[1]
            if ident in self.functions:
                return frozenset({("func", ident)})
            if ident in self.classes:
                return frozenset({("class", ident)})
            return frozenset()
        if kind == "self":
            return frozenset({("inst", cls)}) if cls is not None else frozenset()
        if kind == "super":
            return frozenset({("super", value[1])})
        if kind == "attr":
            return self._attribute(self.evaluate(value[1], cls, depth + 1), value[2], depth + 1)
        if kind == "call":
            callee = value[1]
            if callee and callee[0] == "attr" and callee[2] in ("values", "items"):
                views = self._container_view(callee[1], callee[2], cls, depth)
                if views:
                    return views
            found: set[AVal] = set()
            for item in self.evaluate(value[1], cls, depth + 1):
                if item[0] == "class":
                    found.add(("inst", item[1]))
                elif item[0] == "func":
                    found |= self._returns(item[1], depth + 1)
            return frozenset(found)
        if kind == "elem" or kind == "item":  # ("item": one unpacked by position, taken as any)
            found = set()
            for item in self.evaluate(value[1], cls, depth + 1):
                if item[0] == "seqv":
                    found |= set(item[1])
            return frozenset(found)
        if kind == "seq":
            items: set[AVal] = set()
            for element in value[1]:
                items |= self.evaluate(element, cls, depth + 1)
            return frozenset({("seqv", tuple(sorted(items)))})
        if kind == "partial":
            inner = tuple(sorted(self.evaluate(value[1], cls, depth + 1)))
            return frozenset({("partialv", inner, value[2])})
        if kind == "union":
            found = set()
            for element in value[1]:
                found |= self.evaluate(element, cls, depth + 1)
            return frozenset(found)
        if kind == "param":
            return self._arguments(value[1], value[2], depth + 1)
        if kind == "field":
            return self._field_classes(value[1], depth + 1)
        return frozenset()

    def _container_view(
        self, container: Value, method: str, cls: str | None, depth: int
    ) -> frozenset[AVal]:
        """``modules.values()`` / ``modules.items()`` of a container of modules (an
        ``nn.ModuleDict``): its elements, or (name, element) pairs, whose name is not known."""
        found: set[AVal] = set()
        for item in self.evaluate(container, cls, depth + 1):
            if item[0] != "seqv":
                continue
            if method == "values":
                found.add(item)
            else:
                found.add(("seqv", tuple(("seqv", (element,)) for element in item[1])))
        return frozenset(found)

    def _field_classes(self, name: str, depth: int) -> frozenset[AVal]:
        """The project classes a named field is given anywhere (class-body defaults, keyword
        arguments): ``config.mlp_class(config)`` builds one of them. Only classes: a field
        that also holds other things decides nothing."""
        found: set[AVal] = set()
        for module in self.modules.values():
            for value in module.fields.get(name, ()):
                for item in self.evaluate(value, None, depth + 1):
                    if item[0] != "class":
                        return frozenset()
                    found.add(item)
        return frozenset(found)

    def _arguments(self, function_id: str, name: str, depth: int) -> frozenset[AVal]:
        """What the callers of a function pass as its parameter ``name``: only functions and
        methods are recorded at call sites (``FunctionSummary.passes``)."""
        summary = self.functions.get(function_id)
        if summary is None or name not in summary.params:
            return frozenset()
        index = summary.params.index(name)
        bound = summary.class_id is not None and summary.params[0] in ("self", "cls")
        position = index - 1 if bound else index
        found: set[AVal] = set()
        for caller, passed in self._callers().get(function_id, ()):
            for key, value in passed:
                if key in (name, position):
                    found |= self.evaluate(value, self._class_of(caller), depth + 1)
        return frozenset(found)

    def _callers(self) -> dict[str, list[tuple[str, tuple]]]:
        """Function id -> (caller id, functions it passes) for every call passing functions."""
        index = self._cache.get("<callers>")
        if index is None:
            index = {}
            self._cache["<callers>"] = index  # while building, parameters evaluate to nothing
            for fid in sorted(self.functions):
                for callee, passed in self.functions[fid].passes:
                    for target in self.call_targets(callee, fid):
                        index.setdefault(target, []).append((fid, passed))
        return index

    def _attribute(self, bases: Iterable[AVal], name: str, depth: int) -> frozenset[AVal]:
        found: set[AVal] = set()
        for base in bases:
            kind = base[0]
            if kind == "ext":
                found.add(("ext", f"{base[1]}.{name}"))
            elif kind == "inst":
                attr = self._instance_attribute(base[1], name)
                if attr is not None:
                    owner, value = attr
                    found |= self.evaluate(value, owner, depth + 1)
                method = self.lookup_method(base[1], name)
                if method is not None:
                    found.add(("func", method))
            elif kind == "class":
                method = self.lookup_method(base[1], name)
                if method is not None:
                    found.add(("func", method))
            elif kind == "super":
                for parent in self.mro(base[1])[1:]:
                    method = self.classes[parent].methods.get(name)
                    if method is not None:
                        found.add(("func", method))
                        break
        return frozenset(found)

    def _returns(self, function_id: str, depth: int) -> frozenset[AVal]:
        summary = self.functions.get(function_id)
        if summary is None:
            return frozenset()
        found: set[AVal] = set()
        for value in summary.returns:
            found |= self.evaluate(value, summary.class_id, depth + 1)
        return frozenset(found)

    # -- classes -------------------------------------------------------------------------------

    def mro(self, class_id: str) -> tuple[str, ...]:
        """The class and its project base classes, depth-first (close to Python's C3). Kept
        once settled (see ``_unsettled``)."""
        known = self._mros.get(class_id)
        if known is not None:
            return known
        unsettled = self._unsettled
        found = self._mro(class_id)
        if self._unsettled == unsettled:
            self._mros[class_id] = found
        return found

    def _mro(self, class_id: str) -> tuple[str, ...]:
        order: list[str] = []
        pending = [class_id]
        while pending:
            current = pending.pop(0)
            if current in order or current not in self.classes:
                continue
            order.append(current)
            for base in self.classes[current].bases:
                for item in self.evaluate(base, None):
                    if item[0] == "class":
                        pending.append(item[1])
        return tuple(order)

    def lookup_method(self, class_id: str, name: str) -> str | None:
        for owner in self.mro(class_id):
            method = self.classes[owner].methods.get(name)
            if method is not None:
                return method
        return None

    def _instance_attribute(self, class_id: str, name: str) -> tuple[str, Value] | None:
        for owner in self.mro(class_id):
            value = self.classes[owner].attributes.get(name)
            if value is not None:
                return owner, value
        return None

    def _callable_function(self, item: AVal) -> str | None:
        """The function that runs when ``item`` is called."""
        if item[0] == "func":
            return item[1]
        if item[0] == "class":
            return self.lookup_method(item[1], "__init__")
        if item[0] == "inst":
            return self.lookup_method(item[1], "forward") or self.lookup_method(item[1], "__call__")
        return None

    def _class_of(self, function_id: str) -> str | None:
        summary = self.functions.get(function_id)
        return summary.class_id if summary is not None else None

    # -- module buffers ------------------------------------------------------------------------

    def has_buffers(self, module: Value | None, scope_id: str) -> bool:
        """Whether a module (a value of ``scope_id``) is proven to own buffers: built by a
        known buffered constructor (BatchNorm, a torchvision ResNet, a pack entry), or of a
        project class whose ``__init__`` always builds such a submodule or registers a
        buffer. Every alternative must own some; anything unknown is not proven."""
        if module is None:
            return False
        key = ("<buffers>", module, scope_id)
        if key not in self._cache:
            self._cache[key] = False  # cycle guard
            self._cache[key] = self._buffered(module, self._class_of(scope_id), 0)
        return bool(self._cache[key])

    def _buffered(self, module: Value, cls: str | None, depth: int) -> bool:
        if depth > 8:
            return False
        if module[0] == "seq":  # nn.Sequential(...): any element's buffers
            return any(self._buffered(item, cls, depth + 1) for item in module[1])
        lookup = _member_lookup(module)
        if lookup is not None:  # ``resnet.__dict__[args.arch](...)``: whichever member it is
            members = self._members(lookup)
            return bool(members) and all(
                self._buffered(_with_callee(module, member), cls, depth + 1) for member in members
            )
        if module[0] == "call":
            made = self.evaluate(module[1], cls)
            return bool(made) and all(self._builds_buffered(item, depth + 1) for item in made)
        held = self.evaluate(module, cls)
        return bool(held) and all(self._holds_buffers(item, depth + 1) for item in held)

    def _members(self, lookup: Value) -> tuple[Value, ...]:
        """The defs and classes of a project module that a call of the shape ``lookup`` gives
        (``("members", module, shape)``) may run without a TypeError; none when the module's
        namespace may hold other callables (see ``ModuleSummary.open_namespace``)."""
        module = self.modules.get(lookup[1])
        if module is None or module.open_namespace:
            return ()
        prefix = f"{module.key}:"
        found: list[Value] = []
        for ident in sorted({*module.functions, *module.classes}):
            name = ident[len(prefix) :]
            if not ident.startswith(prefix) or "." in name or name == MODULE_CODE:
                continue  # a method, a nested def, the module's own code
            if ident in module.classes:
                init = self.lookup_method(ident, "__init__")
                summary = self.functions.get(init) if init is not None else None
                bound = 1
            else:
                summary, bound = module.functions[ident], 0
            if summary is None or _may_accept(summary, lookup[2], bound):
                found.append(("f", ident))
        return tuple(found)

    def _builds_buffered(self, constructor: AVal, depth: int) -> bool:
        """Whether calling ``constructor`` returns a module that owns buffers."""
        kind = constructor[0]
        if kind == "ext":
            return (
                constructor[1] in BUFFERED_MODULES
                or constructor[1] in CONVERTS_BATCH_NORM
                or constructor[1] in knowledge().buffered_modules
            )
        if kind == "class":
            return self._class_buffered(constructor[1], depth)
        if kind == "func":
            summary = self.functions.get(constructor[1])
            return (
                summary is not None
                and bool(summary.returns)
                and all(self._buffered(v, summary.class_id, depth + 1) for v in summary.returns)
            )
        return False

    def _holds_buffers(self, item: AVal, depth: int) -> bool:
        if item[0] == "inst":
            return self._class_buffered(item[1], depth)
        if item[0] == "seqv":
            return any(self._holds_buffers(inner, depth + 1) for inner in item[1])
        return False

    def _class_buffered(self, class_id: str, depth: int) -> bool:
        for owner in self.mro(class_id):
            summary = self.classes[owner]
            if summary.registers_buffer or any(
                self._buffered(v, owner, depth + 1) for v in summary.submodules
            ):
                return True
            for base in summary.bases:
                if any(
                    item[0] == "ext" and self._builds_buffered(item, depth + 1)
                    for item in self.evaluate(base, None)
                ):
                    return True  # class Net(torchvision.models.ResNet)
        return False

    # -- compile roots -------------------------------------------------------------------------

    def compile_options(self, compiler: Value, scope: str) -> tuple | None:
        """Options if ``compiler`` is torch.compile (or a wrapper of it), else None."""
        for item in self.evaluate(compiler, self._class_of(scope)):
            options = self._compiler_options(item, 0)
            if options is not None:
                return options
        return None

    def _compiler_options(self, item: AVal, depth: int) -> tuple | None:
        if depth > 6:
            return None
        if item[0] == "ext" and compiles(item[1], self.wrappers):
            return ()
        if item[0] == "partialv":
            for inner in item[1]:
                options = self._compiler_options(inner, depth + 1)
                if options is not None:
                    return tuple(options) + tuple(item[2])
        if item[0] == "func":
            summary = self.functions.get(item[1])
            if summary is not None and summary.compiles_param:
                return summary.compile_options
        return None

    def compiled_functions(
        self, target: Value, scope: str, *, method: bool = False
    ) -> list[tuple[str, str]]:
        """(function id, kind) pairs a compile site's target runs as compiled code.

        With ``method`` (``x.compile()``), an instance whose class defines its own ``compile``
        (an engine, a pipeline module) is skipped: that call is not ``nn.Module.compile``."""
        found: list[tuple[str, str]] = []
        for item in self.evaluate(target, self._class_of(scope)):
            if method and item[0] == "inst" and self.lookup_method(item[1], "compile"):
                continue
            self._compiled_from(item, found, "call")
        return found

    def _compiled_from(self, item: AVal, found: list[tuple[str, str]], kind: str) -> None:
        if item[0] == "func":
            found.append((item[1], kind))
        elif item[0] == "inst":
            forward = self.lookup_method(item[1], "forward")
            if forward is not None:
                found.append((forward, "module" if kind == "call" else kind))
        elif item[0] == "seqv":
            for inner in item[1]:
                self._compiled_from(inner, found, "block")

    def __getstate__(self) -> dict:
        """For spawned workers: the evaluation cache is rebuilt there on demand."""
        state = dict(self.__dict__)
        state["_cache"] = {}
        state["_results"] = {}
        state["_targets"] = {}
        state["_exports"] = {}
        state["_mros"] = {}
        state["_unsettled"] = 0
        state["_parsed"] = {}
        return state

    # private state
    _cache: dict = field(default_factory=dict, repr=False)
    _results: dict[frozenset, frozenset] = field(default_factory=dict, repr=False)
    # Answers derived from evaluations (``call_targets``, ``mro``), kept once settled. An
    # evaluation is kept in ``_cache`` for good when it finishes, but while a value is being
    # evaluated it reads as nothing (the cycle guard, ``_PENDING``), and one cut off by depth
    # is not kept. ``_unsettled`` counts both. A derived answer whose computation counted
    # none read only evaluations kept for good, so computing it again (as the linker did
    # before these memos) would read the same ones and give the same answer: it is kept. One
    # that counted some is computed again next time.
    _targets: dict[frozenset[AVal], tuple[str, ...]] = field(default_factory=dict, repr=False)
    _mros: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    # what names lead to (see ``_export_of``)
    _exports: dict[str, tuple[Value, tuple[str, ...]] | frozenset[AVal]] = field(
        default_factory=dict, repr=False
    )
    _unsettled: int = field(default=0, repr=False)
    _parsed: dict = field(default_factory=dict, repr=False)  # files parsed to measure spans
    _modules_with_regions: set[str] = field(default_factory=set, repr=False)
    _modules_with_captures: set[str] = field(default_factory=set, repr=False)
    # names of project functions that test ``is_compiling()`` (see compiling_sides_of)
    _predicate_names: set[str] | None = field(default=None, repr=False)


def link(
    summaries: Sequence[ModuleSummary],
    wrappers: Iterable[str] = (),
    sources: SourceLookup | None = None,
    parsed: dict | None = None,
) -> ProjectFacts:
    """Link every file's summary (order-independent; output is deterministic). ``parsed``:
    trees the first pass kept, by path (:func:`distlint.semantic.spans.parsed_entry`), so
    measuring lazy spans in those files parses nothing."""
    modules = {s.key: s for s in sorted(summaries, key=lambda s: s.key)}
    facts = ProjectFacts(modules, wrappers=frozenset(wrappers), sources=sources)
    facts._parsed.update(parsed or {})
    for module in modules.values():
        for fid, summary in module.functions.items():
            facts.functions[fid] = summary
            facts.function_module[fid] = module
        facts.classes.update(module.classes)
        for name, count in module.attribute_writes.items():
            facts.attribute_writes[name] = facts.attribute_writes.get(name, 0) + count
    _call_graph(facts)
    _roots(facts)
    _regions(facts)
    _certain(facts)
    _captures(facts)
    _rank_functions(facts)
    facts.rank_attributes = frozenset(
        attr for cls in facts.classes.values() for attr in cls.rank_attributes
    )
    return facts


def _call_graph(facts: ProjectFacts) -> None:
    for fid in sorted(facts.functions):
        summary = facts.functions[fid]
        targets: list[str] = []
        unknown = 0
        for value in summary.calls:
            if value == ("?",):
                unknown += 1
                continue
            found = facts.call_targets(value, fid)
            if not targets:
                targets.extend(found)  # no duplicates within one answer
            else:
                for target in found:
                    if target not in targets:
                        targets.append(target)
        facts.edges[fid] = tuple(targets)
        facts.unknown_calls[fid] = unknown


def _roots(facts: ProjectFacts) -> None:
    found: list[tuple[ModuleSummary, CompileSite, str, str, Options, Options | None]] = []
    for module in facts.modules.values():
        for scope, site in module.compile_sites:
            given = facts.compile_options(site.compiler, scope)
            if given is None or _wrapper_site(facts, site):
                continue
            method = site.kind == "method"
            compiled = facts.compiled_functions(site.target, scope, method=method)
            if not compiled and site.kind != "decorator":
                why = _unresolved_reason(facts, site, scope)
                if why is not None:
                    facts.unresolved.append((module.path, site.span, why))
                if _library_module(site.target):  # a second pass follows it (DL109)
                    facts._modules_with_regions.add(module.key)
            binding = _site_binding(facts, site, scope) if site.construction is not None else None
            for function, reached in compiled:
                found.append((module, site, function, reached, tuple(given), binding))
    facts.resolve(site.span for _, site, _, _, _, _ in found)
    facts.resolve(span for _, span, _ in facts.unresolved)
    seen: set[tuple] = set()
    for module, site, function, reached, given, binding in found:
        facts._modules_with_regions.add(module.key)
        root = site.root(module.path, function, reached, given, binding)
        key = (root.path, root.span, function)
        if key not in seen:
            seen.add(key)
            facts.roots.append(root)
    facts.roots.sort(key=lambda r: (r.path, r.span.start.line, r.target))


def _wrapper_site(facts: ProjectFacts, site: CompileSite) -> bool:
    """``return torch.compile(fn, ...)`` in a compile wrapper: its call sites are the roots
    (``maybe_compile(step)``), with the options it passes."""
    target = site.target
    if not target or target[0] != "param":
        return False
    summary = facts.functions.get(target[1])
    return summary is not None and summary.compiles_param


def _site_binding(facts: ProjectFacts, site: CompileSite, scope: str) -> Options | None:
    """The known ``self`` attributes of the module a compile site compiles, when the site
    shows its construction (``torch.compile(Net(mesh=None))``) and it is of one class."""
    classes = {
        item[1] for item in facts.evaluate(site.target, facts._class_of(scope)) if item[0] == "inst"
    }
    if len(classes) != 1 or site.construction is None:
        return None
    return _constructed_attributes(facts, classes.pop(), site.construction, site.private)


def _constructed_attributes(
    facts: ProjectFacts, class_id: str, construction: Options, private: bool
) -> Options | None:
    """``self.<name>`` values every method of one instance sees: set once at the top level of
    its class's own ``__init__`` from a literal or from a parameter the construction passes
    a literal to (or leaves at its literal default), and written nowhere else: no other write
    in the class or its bases, and -- unless the instance stays ``private`` to the function
    that builds and compiles it -- no ``x.<name> = ...`` on any object and no
    ``setattr``/``__dict__`` write with a name not known. Regions then skip the sides of
    ``if self.<name>:`` tests that instance never takes (torch_xla's ``if self.mesh and ...:``
    in a test model built without a mesh)."""
    cls = facts.classes.get(class_id)
    init = cls.methods.get("__init__") if cls is not None else None
    summary = facts.functions.get(init) if init is not None else None
    if cls is None or summary is None or not cls.init_values:
        return None
    if not private and facts.attribute_writes.get("*"):
        return None
    lineage = facts.mro(class_id)
    if any(facts.classes[c].dynamic_attributes for c in lineage):
        return None
    bound = bind(summary, construction, strict=True)
    entries: list[tuple[str, object]] = [(STARRED, "<expr>")]
    for name, (kind, value) in sorted(cls.init_values.items()):
        if not private and facts.attribute_writes.get(name):
            continue  # ``model.<name> = ...`` somewhere: this instance may have been changed
        if sum(facts.attribute_writes.get(f"{c}.{name}", 0) for c in lineage) != 1:
            continue
        if kind == "param":
            if value not in bound:
                continue
            value = bound[value]
        if value is None or isinstance(value, LITERAL_TYPES):
            entries.append((f"self.{name}", value))
    return tuple(entries) if len(entries) > 1 else None


def _library_module(target: Value) -> bool:
    """Whether a compile site's target is a module a library builds (``nn.Sequential(...)``,
    ``torchvision.models.resnet18()``): its code is not the project's, but it is a module."""
    if not target:
        return False
    if target[0] == "seq":  # nn.Sequential(...) is followed as the sequence of its children
        return True
    called = target[1] if target[0] == "call" else None
    return isinstance(called, tuple) and called[:1] == ("g",) and builds_module(called[1])


def _unresolved_reason(facts: ProjectFacts, site: CompileSite, scope: str) -> str | None:
    """Why a compile site's target is not known code (None: it is knowingly not compiled)."""
    target = site.target
    values = facts.evaluate(target, facts._class_of(scope)) if target else frozenset()
    if site.kind == "method" and any(
        v[0] == "inst" and facts.lookup_method(v[1], "compile") for v in values
    ):
        return None  # the class's own compile method
    for value in sorted(values, key=repr):
        if value[0] == "ext":
            return f"an object from `{value[1]}`, outside the project"
        if value[0] == "inst":
            return f"an instance of `{value[1].rsplit(':', 1)[-1]}`, which defines no forward"
    if target and target[0] == "call" and target[1] and target[1][0] == "g":
        return f"what `{target[1][1]}(...)` returns, outside the project"
    if target and target[0] == "param":
        return f"the parameter `{target[2]}`, to which no call passes project code"
    return "a value the analysis cannot follow (a parameter, or computed at run time)"


def _regions(facts: ProjectFacts) -> None:
    """The compile roots that reach each function by calls, following what each call site
    binds: a helper called only under a branch its callers' arguments decide against (``if
    use_cpu: fill_indices_cpu(...)`` with ``use_cpu`` never passed) is not compiled. A root's
    own parameters are unknown (its compiled callers are not followed)."""
    reached: dict[str, list[RootInfo]] = {}
    bound_by: dict[str, set[Options | None]] = {}  # every binding a compiled call makes
    for root in facts.roots:
        if facts.is_disabled(root.target):
            continue
        queue: deque[tuple[str, Options | None]] = deque([(root.target, root.binding)])
        seen: set[tuple[str, Options | None]] = set()
        bindings: dict[str, int] = {}
        visited: set[str] = set()
        while queue:
            current, arguments = queue.popleft()
            if arguments is not None and bindings.get(current, 0) >= _MAX_BINDINGS:
                arguments = None  # called many ways: what is bound no longer decides anything
            if (current, arguments) in seen:
                continue
            seen.add((current, arguments))
            bound_by.setdefault(current, set()).add(arguments)
            if arguments is not None:
                bindings[current] = bindings.get(current, 0) + 1
            if current not in visited:
                visited.add(current)
                reached.setdefault(current, []).append(root)
            live, dead = _calls_under(facts, current, arguments)
            for callee in facts.edges.get(current, ()):
                if facts.is_disabled(callee) or facts.is_opaque(callee):
                    continue
                passed = live.get(callee)
                if passed is None and callee in dead:
                    continue  # called only on a side no call here takes
                for argument in passed or (None,):
                    queue.append((callee, argument))
    for fid, roots in reached.items():
        module = facts.function_module.get(fid)
        if module is not None:
            facts._modules_with_regions.add(module.key)
        unique = {(r.path, r.span.start.line, r.span.start.column, r.target): r for r in roots}
        facts.regions[fid] = tuple(unique[k] for k in sorted(unique))
    _decided_branches(facts, bound_by)


def _decided_branches(facts: ProjectFacts, bound_by: dict[str, set[Options | None]]) -> None:
    """The sides of parameter tests no compiled call takes: ``if convergence > 0:`` in a
    function every compiled caller calls without ``convergence`` (default 0). Region rules
    skip them. Only when every binding is known (a root's own parameters are not)."""
    for fid, bound in bound_by.items():
        summary = facts.functions.get(fid)
        if summary is None or not summary.param_tests or None in bound:
            continue
        values = [bind(summary, arguments, strict=True) for arguments in bound if arguments]
        if len(values) != len(bound):
            continue  # a call passing nothing: only defaults (strict bind) -- handled below
        for located, cond in summary.param_tests:
            key = getattr(located, "key", None)
            if key is None:
                continue
            sides = {decided_side(cond, value) for value in values}
            if len(sides) == 1 and None not in sides:
                taken = sides.pop()
                facts.decided_branches.setdefault(summary.path, {})[key[1]] = bool(taken)


_MAX_BINDINGS = 8  # distinct argument bindings followed per function, per root


def _calls_under(
    facts: ProjectFacts, function_id: str, arguments: Options | None
) -> tuple[dict[str, list[Options]], set[str]]:
    """The project functions a function calls given what is bound to its parameters
    (``arguments``; None: nothing known), with what each call binds; and those it calls only
    on branch sides the bound values rule out."""
    summary = facts.functions.get(function_id)
    live: dict[str, list[Options]] = {}
    dead: set[str] = set()
    if summary is None:
        return live, dead
    bound = bind(summary, arguments, strict=True) if arguments is not None else {}
    instance = tuple((k, v) for k, v in bound.items() if k.startswith("self."))

    def visit(effects: Sequence[Effect], alive: bool) -> None:
        for effect in effects:
            if effect.kind == "call" and effect.callee is not None:
                passed = forward_arguments(effect.arguments, bound, members=False)
                if instance and effect.callee[:2] == ("attr", ("self",)):
                    passed = (*passed, *instance)  # ``self.helper(x)``: the same instance
                for target in facts.call_targets(effect.callee, function_id):
                    if alive:
                        found = live.setdefault(target, [])
                        if passed not in found:
                            found.append(passed)
                    else:
                        dead.add(target)
            elif effect.kind == "branch":
                side = decided_side(effect.cond, bound) if alive else None
                visit(effect.body, alive and side is not False)
                visit(effect.orelse, alive and side is not True)
            elif effect.kind == "loop":
                visit(effect.body, alive)

    visit(summary.effects, True)
    return live, dead


def _captures(facts: ProjectFacts) -> None:
    """Functions that calls made under a CUDA graph capture run, transitively."""
    starts: list[tuple[str, str, object]] = []
    for module in facts.modules.values():
        for scope, value, span in module.capture_sites:
            starts.extend((t, module.path, span) for t in facts.call_targets(value, scope))
    if not starts:
        return
    facts.resolve(span for _, _, span in starts)
    reached: dict[str, tuple[str, Span]] = {}
    for target, path, lazy in sorted(starts, key=lambda s: (s[0], s[1], _span_key(s[2]))):
        where = (path, getattr(lazy, "span", None) or NOWHERE)
        queue = deque([target])
        while queue:
            current = queue.popleft()
            if current in reached:
                continue
            reached[current] = where
            queue.extend(c for c in _unconditional_callees(facts, current) if c not in reached)
    facts.captures = reached
    for fid in reached:
        owner = facts.function_module.get(fid)
        if owner is not None:
            facts._modules_with_captures.add(owner.key)


def _certain(facts: ProjectFacts) -> None:
    """Functions that run every time some fullgraph root runs (``certain``), and every time
    some root runs (``always``): the root, then what it always calls (outside any branch, one
    known target), transitively. Region rules report an error only where it is certain;
    elsewhere a break fails the compile only on some paths."""
    facts.certain = _always_run(facts, fullgraph_only=True)
    facts.always = _always_run(facts, fullgraph_only=False)


def _always_run(facts: ProjectFacts, *, fullgraph_only: bool) -> set[str]:
    found: set[str] = set()
    queue = deque(
        root.target
        for root in facts.roots
        if (root.fullgraph or not fullgraph_only) and not facts.is_disabled(root.target)
    )
    while queue:
        current = queue.popleft()
        if current in found:
            continue
        found.add(current)
        queue.extend(
            callee
            for callee in _unconditional_callees(facts, current, single=True)
            if callee not in found and not facts.is_disabled(callee) and not facts.is_opaque(callee)
        )
    return found


def _unconditional_callees(
    facts: ProjectFacts, function_id: str, *, single: bool = False
) -> list[str]:
    """Project functions a function always calls when it runs: calls outside any branch and
    before the first branch that may return or raise (loops and ``with`` bodies count). With
    ``single``, only calls with one possible target."""
    summary = facts.functions.get(function_id)
    if summary is None:
        return []
    found: list[str] = []
    pending = list(summary.effects)
    while pending:
        effect = pending.pop(0)
        if effect.kind == "branch":
            if _may_exit(effect.body) or _may_exit(effect.orelse):
                break
            continue
        if effect.kind == "exit":
            break
        if effect.kind == "loop":
            pending[:0] = list(effect.body)
            continue
        value = effect.callee
        if effect.kind == "forward":
            value = ("param", function_id, effect.name)
        if effect.kind in ("call", "forward") and value is not None:
            targets = facts.call_targets(value, function_id)
            if single and len(targets) != 1:
                continue
            found.extend(t for t in targets if t not in found)
    return found


def _may_exit(effects: Sequence[Effect]) -> bool:
    """Whether a path may ``return`` or ``raise`` (``break``/``continue`` stay in the loop)."""
    for effect in effects:
        if effect.kind == "exit" and effect.name in ("return", "raise"):
            return True
        if effect.kind in ("branch", "loop") and (
            _may_exit(effect.body) or _may_exit(effect.orelse)
        ):
            return True
    return False


def _span_key(lazy: object) -> tuple[int, int]:
    span = getattr(lazy, "span", None)
    return (span.start.line, span.start.column) if span is not None else (0, 0)


def _rank_functions(facts: ProjectFacts) -> None:
    """Project functions returning a rank: those that return one themselves, then those
    returning a call of one, transitively."""
    rank = {fid for fid, s in facts.functions.items() if s.returns_rank}
    # The first pass asks for the targets of every returned call (up to the first rank
    # function). Asked again outside any evaluation, a call's targets are the same (see
    # ``ProjectFacts._unsettled``), so the later passes read the targets the first one got:
    # the same functions are added, in the same order, without asking again.
    pending: list[tuple[str, list[str]]] = []
    for fid, summary in facts.functions.items():
        if fid in rank or not summary.return_callees:
            continue
        targets: list[str] = []
        for value in summary.return_callees:
            found = facts.call_targets(value, fid)
            if any(target in rank for target in found):
                rank.add(fid)
                break
            targets.extend(found)
        else:
            pending.append((fid, targets))
    changed = True
    while changed:
        changed = False
        waiting = pending
        pending = []
        for fid, targets in waiting:
            if any(target in rank for target in targets):
                rank.add(fid)
                changed = True
            else:
                pending.append((fid, targets))
    facts.rank_functions = rank


def _member_lookup(module: Value) -> Value | None:
    """The ``("members", ...)`` callee of a module value that calls a member looked up by a
    computed name (``resnet.__dict__[arch](...)``, also an element of its result)."""
    if module[0] == "item":
        module = module[1]
    if module[0] == "call" and module[1][0] == "members":
        return module[1]
    return None


def _with_callee(module: Value, callee: Value) -> Value:
    """``module`` with the callee of its call replaced (see ``_member_lookup``)."""
    if module[0] == "item":
        return ("item", ("call", callee), *module[2:])
    return ("call", callee)


def _may_accept(summary: FunctionSummary, shape: tuple, bound: int) -> bool:
    """Whether a call with ``shape`` (positional count, keyword names, starred) may bind to
    the signature of ``summary`` (less its first ``bound`` parameters); True when not known
    (a decorated function may take anything)."""
    if summary.accepts is None or summary.decorators or shape[2]:
        return True
    positional, required, varargs, kwonly, kwonly_required, varkw = summary.accepts
    positional, required = positional[bound:], max(0, required - bound)
    count, keywords = shape[0], set(shape[1])
    if count > len(positional) and not varargs:
        return False
    if keywords & set(positional[:count]):
        return False  # given twice
    if not varkw and keywords - set(positional) - set(kwonly):
        return False
    return set(positional[count:required]) <= keywords and set(kwonly_required) <= keywords
