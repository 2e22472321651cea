"""The benchmark scripts' own logic (parsing, the rule a ratio is judged by) runs as their
docstring examples: a format change in the C++ benchmark's lines, or a rule edited without its
example, fails here instead of silently dropping lines from a table."""

import doctest
import importlib
import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


@pytest.mark.parametrize("name", ["machine", "onednn_ratios"])
def test_examples_run(name):
    sys.path.insert(0, BENCH)
    try:
        module = importlib.import_module(name)
    finally:
        sys.path.remove(BENCH)
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert attempted > 0 and failed == 0


def test_every_printed_form_is_parsed():
    # The forms x86_vs_onednn.cpp prints for a case that has a oneDNN reference: each must parse.
    sys.path.insert(0, BENCH)
    try:
        from onednn_ratios import parse
    finally:
        sys.path.remove(BENCH)
    with open(os.path.join(BENCH, "..", "dnn", "bench", "x86_vs_onednn.cpp")) as f:
        source = f.read()
    forms = [
        "ours %8.3f ms  onednn %8.3f ms (%5.2fx)  onednn+reorders %8.3f ms (%5.2fx)",
        "ours %8.3f ms  onednn on nchw %8.3f ms (%5.2fx)  %s",
        "ours nchw %8.3f ms, blocked %8.3f ms  onednn fwd+bwd %8.3f ms  ",
        "ours %8.3f ms  onednn fwd+bwd %8.3f ms (%5.2fx)  ours %s, onednn %s",
    ]
    for form in forms:
        assert form in source, form
        line = "some case" + " " * 40 + form.replace("%8.3f", "   1.500").replace("%5.2f", "1.00")
        assert parse(line.replace("%s", "impl")), form
