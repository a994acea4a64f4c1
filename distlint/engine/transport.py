"""Results between processes and in the cache: pickles that survive deep summaries.

A summary's effects nest as the code does (an ``elif`` chain of 300 branches is 300 levels of
``orelse``), and pickling recurses once per level: past Python's default limit of 1,000 frames,
a worker could not hand its result back and died with the file unchecked. A pickle that hits
the limit is made again on the parser's large stack (:func:`on_large_stack`), and so is its
unpickling: the common case pays nothing. While a call on the large stack holds the raised
limit (a stage that timed out runs on), a pickle on this thread's stack would not hit the
limit before the end of the stack (SIGSEGV): it is made on the large stack at once.
"""

from __future__ import annotations

import pickle
from multiprocessing.connection import Connection
from typing import Any

from distlint.syntax.source import limit_raised, on_large_stack


def dumps(value: object) -> bytes:
    if not limit_raised():
        try:
            return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except RecursionError:
            pass
    return on_large_stack(pickle.dumps, value, pickle.HIGHEST_PROTOCOL)


def loads(data: bytes) -> Any:
    if not limit_raised():
        try:
            return pickle.loads(data)
        except RecursionError:
            pass
    return on_large_stack(pickle.loads, data)


def send(conn: Connection, value: object) -> None:
    conn.send_bytes(dumps(value))


def receive(conn: Connection) -> Any:
    return loads(conn.recv_bytes())
