"""Per-file summaries: plain, picklable data that depends on one file only.

Values are described symbolically (:data:`~distlint.semantic.values.Value`, whose encoding
:mod:`.values` describes) and evaluated when files are linked, so a summary can say
"``self.block`` holds an instance of whatever ``Block`` names here" without knowing the other
files. A file's compile sites are :class:`~distlint.semantic.compile_sites.CompileSite`.

Ids: ``"<module key>:<qualname>"`` with Python's qualname (``Net.forward``,
``outer.<locals>.inner``); the module-level code of a file is ``"<module key>:<module>"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from distlint.findings import Span
from distlint.semantic.compile_sites import CompileSite
from distlint.semantic.values import Options, Value
from distlint.syntax.spans import NodeSpan

MODULE_CODE = "<module>"


WRAPPED_ARGUMENT = "<wrapped>"  # an argument value: a DDP/FSDP-wrapped model
# an argument value: the DDP model held by the caller's name that follows (see ``ddp_models``),
# whose forward issues a collective only if the model has buffers
DDP_ARGUMENT = "<ddp>"
UNPROVEN_DDP_ARGUMENT = "<ddp?>"  # the same, once the buffers are known not to be proven
BUFFERED_DDP_ARGUMENT = "<ddp!>"  # the same, once they are proven (a DDP model is not sharded)
# an argument value: an object's attribute held by the caller's text that follows (see
# ``passed_members``), a wrapped model if the object's class keeps one there
MEMBER_ARGUMENT = "<member>"


@dataclass(frozen=True, slots=True)
class Effect:
    """One step of a function's collective behaviour, in source order.

    kinds: ``collective`` (``name`` is the resolved op, ``group`` whether a non-default group
    is passed), ``implicit`` (a wrapped model's forward/backward, a library barrier), ``call``
    (a project function that may issue collectives; ``callee`` and literal ``arguments``),
    ``branch`` (``cond`` is the condition; ``body``/``orelse`` the two paths), ``loop``
    (``body``; ``name`` is for/while), ``def`` (a closure defined here, ``callee``), ``exit``
    (``name`` is return/raise/break/continue), ``forward`` (a call of the parameter ``name``:
    a forward of whatever model the caller passes), ``made`` (a call of what the project
    function ``callee`` returned, element ``arguments[0][1]`` of it: a forward if that function
    returns a wrapped model), ``member`` (a call of attribute ``name`` of an object whose value
    is ``callee``: a forward if that object's class keeps a wrapped model there). A branch's
    ``name`` is ``guard`` when its test
    reads as "running distributed" (taken on every rank of a distributed job).
    """

    kind: str
    span: NodeSpan | None = None
    name: str = ""
    text: str = ""  # the code as written, for messages
    callee: Value | None = None
    arguments: Options = ()
    group: bool = False
    group_param: str = ""  # the group is this parameter (``group=None`` means the world)
    cond: Condition | None = None
    body: tuple[Effect, ...] = ()
    orelse: tuple[Effect, ...] = ()

    def __reduce__(self) -> tuple:
        """Pickled as its constructor's arguments: slots make an effect 110 bytes smaller
        than one with a ``__dict__`` (a summary of torch holds 250,000), and a frozen
        dataclass's own slot pickling sets each field in Python (twice as slow to load)."""
        return Effect, _field_values(self)


@dataclass(frozen=True, slots=True)
class Condition:
    """A branch condition: its rank-lattice level here, and what other files may add.

    ``level`` is the test's level from this file alone (:mod:`.rankflow`: 4 = proven to differ
    between ranks, 3 = may differ); ``deferred`` are project functions it calls whose result
    decides (the linker knows whether they return a rank); ``why``/``why_span`` say where the
    rank comes from, for messages.
    """

    level: int  # rankflow level of the test from this file's facts
    callees: tuple[Value, ...] = ()  # calls in the condition (may be rank predicates)
    self_attrs: tuple[str, ...] = ()  # self attributes read (may be set from a rank elsewhere)
    param: str | None = None  # a bare parameter test (`if use_barrier:`), for call-site flags
    negated: bool = False
    text: str = ""
    span: NodeSpan | None = None
    names: tuple[str, ...] = ()  # names and self attributes the condition reads
    why: str = ""  # the rank source, as written (``dist.get_rank()``, ``parameter `rank```)
    why_span: NodeSpan | None = None
    deferred: tuple[str, ...] = ()  # dotted project functions whose result decides the level
    compare: tuple[str, str, tuple[object, ...]] | None = None  # (param, op, literals)
    # ``a is None or b is None``: the junction ("and"/"or") of parameter tests, each a compare
    # triple (a bare parameter ``a`` is (``a``, "truthy", ()))
    junction: str = ""
    parts: tuple[tuple[str, str, tuple[object, ...]], ...] = ()
    # a rank test's flags and the truth each must have for the test to differ between ranks
    # at all (``not distributed or rank == 0`` differs only where ``distributed`` is true)
    varies_when: tuple[tuple[str, bool], ...] = ()

    def __reduce__(self) -> tuple:
        """Pickled as its constructor's arguments (see :meth:`Effect.__reduce__`)."""
        return Condition, _field_values(self)


def _field_values(instance: Effect | Condition) -> tuple:
    """The values of a slotted dataclass's fields, in the constructor's order."""
    return tuple([getattr(instance, name) for name in instance.__slots__])


@dataclass
class FunctionSummary:
    id: str
    name: str
    path: str
    span: Span | None  # the ``def`` name
    class_id: str | None = None  # set for methods
    params: tuple[str, ...] = ()
    defaults: Options = ()  # literal parameter defaults
    decorators: tuple[Value, ...] = ()
    calls: list[Value] = field(default_factory=list)
    returns: list[Value] = field(default_factory=list)
    returns_rank: bool = False
    return_callees: list[Value] = field(default_factory=list)
    # calls passing functions or methods: (callee, ((position or keyword, value), ...))
    passes: list[tuple[Value, tuple[tuple[int | str, Value], ...]]] = field(default_factory=list)
    # what it returns is a DDP/FSDP-wrapped model: -1 the value itself, n element n of a tuple
    returns_wrapped: tuple[int, ...] = ()
    # of those, the DDP-wrapped ones: (element, the wrapped module's value or None)
    returns_ddp: tuple[tuple[int, Value | None], ...] = ()
    # names holding a DDP-wrapped model here -> the wrapped module's value (None: not known)
    ddp_models: dict[str, Value | None] = field(default_factory=dict)
    # arguments that are an object's attribute (``evaluate(trainer.model)``): their text ->
    # (the object's value, the attribute)
    passed_members: dict[str, tuple[Value, str]] = field(default_factory=dict)
    # what a call of it tells of ``is_compiling()`` where it holds / where it fails (see
    # ``regions.predicate_sides``; None: it returns a constant)
    compiling_sides: tuple[bool | None, bool | None] | None = (None, None)
    compiles_param: bool = False  # returns torch.compile(<a parameter>, ...): a compile wrapper
    compile_options: Options = ()  # the options such a wrapper passes
    effects: tuple[Effect, ...] = ()
    # ``if`` statements testing a parameter (``if use_cpu:``, ``if n > 0:``): the located
    # ``if`` (a lazy key: its ordinal among the file's ``if``s) and the test, so the linker can
    # tell which side every compiled caller's arguments rule out
    param_tests: tuple[tuple[object, Condition], ...] = ()
    # the calls its signature accepts: (positional parameter names, how many of them have no
    # default, ``*args``, keyword-only names, those without a default, ``**kwargs``)
    accepts: tuple[tuple[str, ...], int, bool, tuple[str, ...], tuple[str, ...], bool] | None = None


@dataclass
class ClassSummary:
    id: str
    name: str
    path: str
    span: Span | None
    bases: tuple[Value, ...] = ()
    methods: dict[str, str] = field(default_factory=dict)  # name -> function id
    attributes: dict[str, Value] = field(default_factory=dict)  # self.<name> = value
    rank_attributes: tuple[str, ...] = ()
    # modules ``__init__`` always builds (``self.bn = nn.BatchNorm2d(c)`` outside any branch)
    submodules: tuple[Value, ...] = ()
    registers_buffer: bool = False  # ``__init__`` always calls ``self.register_buffer(...)``
    # ``self.<name>`` attributes some method assigns a distributed-wrapped model to (not a DDP
    # without buffer broadcast), for ``trainer.model(x)`` in other code; of those, the DDP ones
    # with the wrapped module's value (None: not known), whose forward needs buffers
    wrapped_attributes: tuple[str, ...] = ()
    ddp_attributes: dict[str, Value | None] = field(default_factory=dict)
    # ``self.<name> = <parameter or literal>`` once at the top level of this class's own
    # ``__init__``: ("param", parameter) or ("literal", value); see link._constructed_attributes
    init_values: dict[str, tuple[str, object]] = field(default_factory=dict)
    dynamic_attributes: bool = False  # ``setattr(self, name, ...)``/``self.__dict__`` writes


@dataclass
class ModuleSummary:
    key: str  # dotted module name, or the path for a file outside any package
    path: str
    exports: dict[str, Value] = field(default_factory=dict)  # module-level names -> values
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    compile_sites: list[tuple[str, CompileSite]] = field(default_factory=list)  # (scope id, site)
    dynamo_flags: dict[str, object] = field(default_factory=dict)  # torch._dynamo.config.X
    # calls made while a CUDA graph is captured: (scope id, callee, where the capture starts)
    capture_sites: list[tuple[str, Value, object]] = field(default_factory=list)  # lazy spans
    enabled: frozenset[str] = frozenset()  # rule codes enabled for this file
    # what named fields may hold, for ``config.mlp_class(config)``: class-body defaults
    # (``mlp_class: type = MLP``) and keyword arguments (``Config(mlp_class=SwiGLU)``), as
    # references to project or library objects
    fields: dict[str, list[Value]] = field(default_factory=dict)
    # attribute writes here (``x.name = ...``, ``setattr(x, "name", ...)``), counted by
    # "<name>", or "<class id>.<name>" for writes on ``self`` in that class's methods; "*"
    # counts writes whose name is not known (``setattr(obj, key, ...)`` on another object)
    attribute_writes: dict[str, int] = field(default_factory=dict)
    # the module's namespace may hold a callable that is not one of its defs or classes (a
    # ``from`` import, a computed module-level value, ``globals()`` writes): a lookup by name in
    # ``module.__dict__`` may then return anything
    open_namespace: bool = False
