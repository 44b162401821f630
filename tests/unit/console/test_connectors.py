"""A connector's failure on the Connectors page as one line (``strom.console.connectors``):
the exception and its message, from a Python traceback (its last line) or a Java stack trace
(its first)."""

from __future__ import annotations

from strom.console.connectors import error_line


def test_a_python_traceback_is_its_exception_line() -> None:
    trace = 'Traceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: no Spark\n'
    assert error_line(trace) == "RuntimeError: no Spark"


def test_a_java_stack_trace_is_its_first_line() -> None:
    trace = "org.apache.kafka.connect.errors.ConnectException: bad file\n\tat Foo.bar(Foo.java:1)"
    assert error_line(trace) == "org.apache.kafka.connect.errors.ConnectException: bad file"


def test_no_trace_is_no_error() -> None:
    assert error_line(None) is None
    assert error_line("\n") is None
