"""The shared analysis layer: per-file summaries, linked into project facts.

Phase 1 (:mod:`.collect`) turns one parsed file into a :class:`~.model.ModuleSummary`: plain,
picklable data that depends on that file alone (what the per-file cache stores). Phase 2
(:mod:`.link`) joins the summaries of every checked file into :class:`~.link.ProjectFacts`:
compiled regions across modules, the call graph, rank taint and collective effects.

A compile site (``@torch.compile``, ``torch.compile(x)``, ``x.compile()``) is modelled once, in
:mod:`.compile_sites`: the summary's record, the linked root derived from it, the form rules
see in the tree, and the options all three read.
"""
