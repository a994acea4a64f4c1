"""Rules, one family per folder. Every module under here is imported by ``registry.all_rules()``.

``compile/`` (DL1xx), ``collectives/`` (DL2xx), ``wrapping/`` (DL3xx), ``custom_ops/`` (DL4xx),
``api/`` (DL5xx), ``cuda_graphs/`` (DL6xx), ``observed/`` (DL9xx), ``tool/`` (DL000, DL001).
Each rule is a ``Rule`` subclass whose class attributes are its metadata and whose docs page is
``docs/rules/<code>.md``; ``_``-prefixed modules hold helpers shared within a family (those
beside the families, ``_paths`` and ``_ddp``, by rules of several). The rule API
lives beside the families: ``registry`` (``Rule``, discovery), ``context`` (what a rule asks
about its file), ``project`` (what project-scope rules see).
"""
