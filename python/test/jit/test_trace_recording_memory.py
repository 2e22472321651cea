"""The recording call of a trace holds no more memory than the eager call: values the step lets go
die while it records (the recorder keys them by storage id; Python tensors made during the call
are noted weakly), and what survives the call is still written back."""

import numpy as np

import megengine as mge
import megengine.functional as F
from megengine.core import _imperative_rt as rt
from megengine.jit import trace

N = 1 << 18  # 1 MiB of float32
MIB = 1 << 20


def chain(x):
    for i in range(8):
        x = F.tanh(x) if i % 2 == 0 else -x
    return x


def _peak_of(fn, x):
    # A request takes a cached block up to twice its size and counts the whole block: blocks
    # earlier tests freed (2 MiB ones after a 1.5 MB gradient) would count each 1 MiB value twice.
    rt.empty_cache(rt.canonical_device(mge.get_default_device()))
    base = mge.get_allocated_memory()
    mge.reset_max_memory_stats()
    fn(x).numpy()
    return mge.get_max_allocated_memory() - base


def test_recording_peaks_like_the_eager_call():
    x = mge.Tensor(np.full(N, 0.25, np.float32))
    eager = _peak_of(chain, x)
    traced = trace(chain, symbolic=True)
    recording = _peak_of(traced, x)  # the first call records
    # Eager holds two or three 1 MiB values at once; keeping every value made it 8 MiB.
    assert eager < 4 * MIB
    assert recording < eager + 2 * MIB, (recording, eager)
    # The compiled graph replays the chain on a new input.
    y = mge.Tensor(np.full(N, -0.5, np.float32))
    got = traced(y).numpy()
    y_want = np.full(N, -0.5, np.float64)
    for i in range(8):
        y_want = np.tanh(y_want) if i % 2 == 0 else -y_want
    np.testing.assert_allclose(got, y_want, rtol=1e-6)


class _Counter:
    def __init__(self):
        self.state = None


def test_a_tensor_made_during_the_recording_and_kept_is_still_written_back():
    holder = _Counter()

    def step(x):
        if holder.state is None:
            holder.state = mge.Tensor(np.zeros(4, np.float32))  # made inside the recording
        tmp = x * 2  # dies with the call
        holder.state._reset(holder.state + tmp.sum())
        return tmp

    traced = trace(step, symbolic=True)
    x = mge.Tensor(np.ones(4, np.float32))
    for _ in range(3):
        traced(x)
    np.testing.assert_array_equal(holder.state.numpy(), np.full(4, 24.0, np.float32))


def test_a_reshape_by_traced_dims_is_a_view_while_recording():
    # Reading x.shape while recording gives TracedDims, so the reshape is a ReshapeTo, which
    # copied: an attention's split into heads held one more value than the eager call. (The
    # result is a view too: the compiled graph, made within the call, then needs no arena.)
    def heads(x):
        b, s, h = x.shape
        return x.reshape(b, s, 4, h // 4).transpose(0, 2, 1, 3)

    x = mge.Tensor(np.arange(N, dtype=np.float32).reshape(4, 256, 256))
    eager = _peak_of(heads, x)
    traced = trace(heads, symbolic=True)
    recording = _peak_of(traced, x)
    assert eager < MIB // 2, eager  # views alone
    assert recording < eager + MIB // 2, (recording, eager)
    assert "ReshapeTo" in " ".join(op for op, _ in traced.ops)
    want = np.arange(N, dtype=np.float32).reshape(4, 256, 4, 64).transpose(0, 2, 1, 3)
    np.testing.assert_array_equal(traced(x).numpy(), want)  # the compiled graph
    y = mge.Tensor(np.ones((4, 256, 256), np.float32))
    np.testing.assert_array_equal(traced(y).numpy(), np.ones((4, 4, 256, 64), np.float32))


def test_the_recording_lets_a_replaced_parameter_go():
    # An optimizer's step replaces each parameter: the eager call frees the old value, which the
    # recording kept (it stands for an input of the graph) until the graph was compiled.
    p = mge.Parameter(np.full(N, 2.0, np.float32))

    def step(x):
        p._reset(p * 0.5 + x)
        a = F.tanh(p)  # two more values after the old one died
        b = a * 3
        return b.sum()

    x = mge.Tensor(np.full(N, 1.0, np.float32))
    eager = _peak_of(step, x)
    p._reset(mge.Tensor(np.full(N, 2.0, np.float32)))
    traced = trace(step, symbolic=True)
    recording = _peak_of(traced, x)
    assert recording < eager + MIB // 2, (recording, eager)
    # Replays read the parameter's current value and write the new one back: 2 -> 2 -> 2.
    np.testing.assert_allclose(float(traced(x).numpy()), N * 3 * np.tanh(2.0), rtol=1e-5)
    np.testing.assert_array_equal(p.numpy(), np.full(N, 2.0, np.float32))
    p._reset(mge.Tensor(np.full(N, 4.0, np.float32)))
    np.testing.assert_allclose(float(traced(x).numpy()), N * 3 * np.tanh(3.0), rtol=1e-5)
    np.testing.assert_array_equal(p.numpy(), np.full(N, 3.0, np.float32))


def test_a_released_parameter_is_bound_under_capture_as_const():
    # Given back its own value, the parameter is not updated; capture_as_const would make a
    # constant of the value the recording let go of, so the graph reads the parameter instead.
    p = mge.Parameter(np.full(4, 2.0, np.float32))

    def step(x):
        p._reset(p)
        return p * x

    traced = trace(step, symbolic=True, capture_as_const=True)
    x = mge.Tensor(np.full(4, 3.0, np.float32))
    for _ in range(2):
        np.testing.assert_array_equal(traced(x).numpy(), np.full(4, 6.0, np.float32))
