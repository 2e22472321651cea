"""megengine.utils.module_stats against the figures MegEngine 1.13's module_stats gives for the
same network and inputs (its totals and rows, taken once with the real MegEngine)."""

import numpy as np
import pytest

import megengine.functional as F
import megengine.module as M
from megengine.utils import module_stats as ms


class Net(M.Module):
    def __init__(self):
        super().__init__()
        self.c1 = M.Conv2d(3, 16, 3, stride=2, padding=1)
        self.bn = M.BatchNorm2d(16)
        self.pool = M.MaxPool2d(2)
        self.c2 = M.Conv2d(16, 32, 3, padding=1, groups=4, bias=False)
        self.gn = M.GroupNorm(4, 32)
        self.up = M.ConvTranspose2d(32, 8, 2, stride=2)
        self.ap = M.AdaptiveAvgPool2d(1)
        self.avg = M.AvgPool2d((2, 2))
        self.fc = M.Linear(8, 10)
        self.fc2 = M.Linear(10, 4, bias=False)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.c1(x))))
        x = self.gn(self.c2(x))
        x = self.avg(self.up(x))
        x = F.flatten(self.ap(x), 1)
        return self.fc2(self.fc(x))


# MegEngine 1.13.0, module_stats(Net(), inputs=<(2, 3, 32, 32) float32>, logging_to_stdout=False)
MEGENGINE_TOTAL = (11432, 2858, 610570, 127152, 31788)
MEGENGINE_FLOPS = [
    ("c1", 229376),
    ("bn", 57344),
    ("pool", 8192),
    ("c2", 147456),
    ("gn", 28672),
    ("up", 135168),
    ("avg", 4096),
    ("ap", 16),
    ("fc", 170),
    ("fc2", 80),
]
MEGENGINE_PARAMS = [
    ("c1-w", 432),
    ("c1-b", 16),
    ("bn-w", 16),
    ("bn-b", 16),
    ("c2-w", 1152),
    ("gn-w", 32),
    ("gn-b", 32),
    ("up-w", 1024),
    ("up-b", 8),
    ("fc-w", 80),
    ("fc-b", 10),
    ("fc2-w", 40),
    ("total", 2858),
]
MEGENGINE_ACTS = [
    ("c1", 8192),
    ("bn", 8192),
    ("pool", 2048),
    ("c2", 4096),
    ("gn", 4096),
    ("up", 4096),
    ("avg", 1024),
    ("ap", 16),
    ("fc", 20),
    ("fc2", 8),
    ("total", 31788),
]


def test_figures_equal_megengine():
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype("float32")
    total, details = ms.module_stats(Net(), inputs=x, logging_to_stdout=False)
    assert tuple(int(v) for v in total) == MEGENGINE_TOTAL
    assert total._fields == ("param_size", "param_dims", "flops", "act_size", "act_dims")
    assert [(r["name"], int(r["flops_num"])) for r in details.flops[:-1]] == MEGENGINE_FLOPS
    assert [(r["name"], int(r["param_dim"])) for r in details.params] == MEGENGINE_PARAMS
    assert [(r["name"], int(r["act_dim"])) for r in details.activations] == MEGENGINE_ACTS
    # real inputs give activation means; shapes only (zeros) do not
    assert "mean" in details.activations[0]
    total, details = ms.module_stats(
        Net(), input_shapes=[(1, 3, 16, 16)], cal_activations=False, logging_to_stdout=False
    )
    assert tuple(int(v) for v in total) == (11432, 2858, 76426, 0, 0)
    assert details.activations == []


def test_tables_are_logged(capsys):
    import io

    from megengine.logger import set_log_file

    buf = io.StringIO()
    set_log_file(buf)
    try:
        ms.module_stats(M.Linear(4, 2), input_shapes=(3, 4))
    finally:
        set_log_file(None)
    text = buf.getvalue()
    for table in ("param stats", "flops stats", "activations stats", "summary"):
        assert table in text
    assert "total_flops" in text and "26.000 OPs" in text  # 6 x 4 + 2


def test_shared_weight_counts_once_and_modes_are_restored():
    class Shared(M.Module):
        def __init__(self):
            super().__init__()
            self.a = M.Linear(4, 4)
            self.b = M.Linear(4, 4)
            self.b.weight = self.a.weight
            self.drop = M.Dropout(0.5)

        def forward(self, x):
            return self.b(self.drop(self.a(x)))

    net = Shared()
    net.train()
    total, details = ms.module_stats(net, input_shapes=(2, 4), logging_to_stdout=False)
    names = [r["name"] for r in details.params]
    assert names == ["a-w", "a-b", "b-b", "total"] and total.param_dims == 24
    assert all(m.training for m in net.modules())
    assert "__getattribute__" not in M.Module.__dict__


def test_fused_parent_reading_a_child_weight_counts_it():
    class Fused(M.Module):
        def __init__(self):
            super().__init__()
            self.fc = M.Linear(3, 2)

        def forward(self, x):  # uses the child's parameters without calling it
            return F.linear(x, self.fc.weight, self.fc.bias)

    total, details = ms.module_stats(Fused(), input_shapes=(1, 3), logging_to_stdout=False)
    assert [r["name"] for r in details.params] == ["fc-w", "fc-b", "total"]
    assert total.flops == 0 and details.flops[-1]["name"] == "total"


def test_receptive_field_rules():
    @ms.register_receptive_field(M.Conv2d, M.MaxPool2d)
    def rf(module, inputs, outputs):
        (rh, rw), (sh, sw) = ms.preprocess_receptive_field(module, inputs, outputs)
        k = module.kernel_size
        k = k if isinstance(k, tuple) else (k, k)
        s = module.stride
        s = s if isinstance(s, tuple) else (s, s)
        return (rh + (k[0] - 1) * sh, rw + (k[1] - 1) * sw), (sh * s[0], sw * s[1])

    net = M.Sequential(M.Conv2d(1, 2, 3), M.MaxPool2d(2), M.Conv2d(2, 2, 3))
    ms.enable_receptive_field()
    try:
        _, details = ms.module_stats(net, input_shapes=(1, 1, 16, 16), logging_to_stdout=False)
    finally:
        ms.disable_receptive_field()
        ms._receptive_field_rules.pop(M.Conv2d)
        ms._receptive_field_rules.pop(M.MaxPool2d)
    got = [(r["receptive_field"], r["stride"]) for r in details.flops[:-1]]
    assert got == [((3, 3), (1, 1)), ((4, 4), (2, 2)), ((8, 8), (2, 2))]


def test_bad_input():
    assert ms.module_stats(M.Linear(2, 2), logging_to_stdout=False) is None
    with pytest.raises(TypeError, match="should in"):
        ms.register_hook_module(3)


def test_helpers():
    assert ms.sizeof_fmt(1536) == "1.500 KiB"
    assert ms.sizeof_fmt(2.5e12, suffix="OPs") == "2.500 TOPs"
    assert ms.sizeof_fmt(0) == "0.000 B"
    assert ms._dtype_bits("bool") == 1 and ms._dtype_bits("float16") == 16
    assert ms.dict2table([{"b": 1}], ["a", "b"]) == [["a", "b"], ["", 1]]
