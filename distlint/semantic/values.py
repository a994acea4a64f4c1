"""How a per-file summary describes values: symbolically (:data:`Value`) and as literal
keyword arguments (:data:`Options`).

A ``Value`` is evaluated when files are linked. The encoding is nested tuples (cheap to build,
pickle and compare):

* ``("g", "pkg.mod.name")``: a global name, already resolved through this file's imports
  (a name defined in this module is ``"<module>.<name>"``);
* ``("f", function_id)``: a function or class defined in this file (nested defs included);
* ``("self",)``: the instance a method runs on; ``("super", class_id)``: ``super()``;
* ``("attr", value, "name")``, ``("call", value)``, ``("elem", value)``: attribute, call
  result, element of an iterable;
* ``("seq", (value, ...))``: a container built from these elements (``nn.ModuleList([...])``);
* ``("partial", value, options)``: ``functools.partial(value, **options)``;
* ``("union", (value, ...))``: one of these;
* ``("param", function_id, "name")``: whatever the callers of the function pass as this
  parameter (used for ``self.fn = fn`` attributes and calls of a parameter under capture);
* ``("members", "pkg.mod", (positional count, keyword names, starred))``: a member of a
  module looked up by a computed name (``resnet.__dict__[args.arch]``) and called with
  arguments of that shape (only the proof that a model owns buffers reads it).
"""

Value = tuple  # see the module docstring
Options = tuple[tuple[str, object], ...]  # literal keyword arguments, sorted
