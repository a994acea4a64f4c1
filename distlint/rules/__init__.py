"""Rule implementations. Every module here is imported by ``registry.all_rules()``.

One module per rule family or topic; each rule is a ``Rule`` subclass whose class attributes
are its metadata and whose docs page is ``rules/<code>.md``.
"""
