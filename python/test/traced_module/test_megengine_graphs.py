"""NeoMeg's traced graphs against MegEngine 1.13's for the same networks
(``fixtures/make_traced_module_fixtures.py`` wrote what MegEngine made of
``fixtures/traced_module_cases.py``): the printed graphs, flattened graphs, each expr's kind,
target and output names, and the outputs for MegEngine's weights and inputs."""

import json
import os
import re
import sys

import numpy as np
import pytest

import megengine as mge
import megengine.traced_module as tm
from megengine.traced_module.pytree import tree_flatten

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
sys.path.insert(0, FIXTURES)
import traced_module_cases as cases

with open(os.path.join(FIXTURES, "megengine_1_13", "traced_module.json")) as f:
    EXPECTED = json.load(f)
ARRAYS = np.load(os.path.join(FIXTURES, "megengine_1_13", "traced_module.npz"))


def _functions_by_name(text):
    # A CallFunction prints its function's module: MegEngine defines relu in functional.nn,
    # NeoMeg in functional.elemwise (both are F.relu). Everything else must match.
    return re.sub(r"= \w+\.(\w+)\(", r"= F.\1(", text)


def _traced(name):
    net = cases.NETS[name]()
    prefix = f"{name}/state/"
    net.load_state_dict({k[len(prefix) :]: ARRAYS[k] for k in ARRAYS.files if k.startswith(prefix)})
    net.eval()
    leaves = [ARRAYS[f"{name}/in/{i}"] for i in range(len(tree_flatten(cases.inputs()[name])[0]))]
    _, tree = tree_flatten(cases.inputs()[name])
    args, kwargs = tree.unflatten([mge.Tensor(v) for v in leaves])
    return net, tm.trace_module(net, *args, **kwargs), args, kwargs


@pytest.mark.parametrize("name", sorted(cases.NETS))
def test_graph_as_megengine_prints_it(name):
    _, traced, _, _ = _traced(name)
    assert _functions_by_name(str(traced.graph)) == _functions_by_name(EXPECTED[name]["graph"])


@pytest.mark.parametrize("name", sorted(cases.NETS))
def test_flattened_graph_as_megengine(name):
    _, traced, _, _ = _traced(name)
    got = _functions_by_name(str(traced.flatten().graph))
    assert got == _functions_by_name(EXPECTED[name]["flat_graph"])


@pytest.mark.parametrize("name", sorted(cases.NETS))
def test_exprs_kinds_targets_names(name):
    _, traced, _, _ = _traced(name)
    assert [cases.describe(e) for e in traced.graph.exprs()] == EXPECTED[name]["exprs"]
    assert len(list(traced.modules())) == EXPECTED[name]["num_modules"]


@pytest.mark.parametrize("name", sorted(cases.NETS))
def test_outputs_as_megengine(name):
    _, traced, args, kwargs = _traced(name)
    outs, _ = tree_flatten(traced(*args, **kwargs))
    assert len(outs) == len([k for k in ARRAYS.files if k.startswith(f"{name}/out/")])
    for i, out in enumerate(outs):
        np.testing.assert_allclose(out.numpy(), ARRAYS[f"{name}/out/{i}"], rtol=1e-5, atol=1e-5)
