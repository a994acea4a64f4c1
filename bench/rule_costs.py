"""Where check time goes, per rule: the time spent in each rule's handlers and project check.

Runs the first and second pass over a corpus in this process (like ``--jobs 1``) with every
rule's ``visit_*``/``leave_*`` methods and ``check_project`` timed, and prints them next to
the time spent parsing. Use it to keep every rule cheap (see README, Performance):

    python bench/rule_costs.py                 # torch/distributed, default rules
    python bench/rule_costs.py --corpus src/ --select ALL
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import libcst as cst

from bench.run import corpus_files, torch_distributed_dir
from distlint.config.settings import FileSettings
from distlint.engine.runner import Task, run
from distlint.rules.registry import all_rules

COSTS: dict[str, float] = {}


def _timed(key: str, function):  # type: ignore[no-untyped-def]
    @functools.wraps(function)
    def call(*args, **kwargs):  # type: ignore[no-untyped-def]
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            COSTS[key] = COSTS.get(key, 0.0) + time.process_time() - start

    return call


def instrument(codes: set[str]) -> None:
    for code, rule in all_rules().items():
        if code not in codes:
            continue
        for event, node in list(rule.visitor_methods()):
            name = f"{event}_{node}"
            setattr(rule, name, _timed(code, getattr(rule, name)))
        original = rule.check_project.__func__  # type: ignore[attr-defined]
        rule.check_project = classmethod(  # type: ignore[method-assign]
            _timed(code, lambda cls, project, f=original: list(f(cls, project)))
        )
        init = rule.__init__
        rule.__init__ = _timed(code, lambda self, ctx, f=init: f(self, ctx))  # type: ignore[method-assign]
    cst.parse_module = _timed("(parse)", cst.parse_module)  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--select", default=None, help="ALL, or comma-separated codes")
    args = parser.parse_args()
    files = [Path(f) for f in corpus_files(args.corpus or torch_distributed_dir())]
    rules = all_rules()
    if args.select == "ALL":
        codes = set(rules)
    elif args.select:
        codes = set(args.select.split(","))
    else:
        codes = {code for code, rule in rules.items() if rule.default_enabled}
    instrument(codes)
    settings = FileSettings(enabled=frozenset(codes))
    start = time.process_time()
    run([Task(p, str(p), settings) for p in files], jobs=1)
    total = time.process_time() - start
    parse = COSTS.pop("(parse)", 0.0)
    rule_total = sum(COSTS.values())
    print(f"{len(files)} files: total {total:.2f} s, parse {parse:.2f} s, rules {rule_total:.2f} s")
    print(f"engine and semantic core (rest): {total - parse - rule_total:.2f} s")
    for code, seconds in sorted(COSTS.items(), key=lambda item: -item[1]):
        print(f"  {code}  {seconds:7.3f} s  {100 * seconds / parse:5.1f}% of parse")


if __name__ == "__main__":
    main()
