"""Collectives inside jit.trace: a traced data-parallel training step gives the parameters of
single-process training on the concatenated batch, and a traced all-reduce sums every call's
inputs. The graph cannot hold a collective, so the trace says so and runs the step eagerly."""

import warnings

import numpy as np
from dist_util import TIMEOUT, rank_input
from test_dist_data_parallel import PER_RANK, WORLD, SmallCNN, _batches, _single, _state

import megengine as mge
import megengine.distributed as dist
import megengine.functional as F
import megengine.optimizer as optim
from megengine.autodiff import GradManager
from megengine.jit import trace


def _traced_training():
    r = dist.get_rank()
    model = SmallCNN()
    dist.bcast_list_(list(model.parameters()))
    initial = _state(model)
    gm = GradManager().attach(model.parameters(), callbacks=[dist.make_allreduce_cb("mean")])
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    @trace(symbolic=True)
    def step(x, y):
        with gm:
            loss = F.nn.cross_entropy(model(x), y)
            gm.backward(loss)
        opt.step().clear_grad()
        return loss

    data, labels = _batches()
    shard = slice(r * PER_RANK, (r + 1) * PER_RANK)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for x, y in zip(data[:, shard], labels[:, shard]):
            step(mge.Tensor(x), mge.Tensor(y))
    return initial, _state(model), [str(w.message) for w in caught]


def test_traced_data_parallel_step_equals_single_process_training():
    (init0, final0, warned), (_, final1, _) = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(
        _traced_training
    )()
    expect = _single(init0)
    for k in expect:
        assert not np.allclose(expect[k], init0[k]), k
        np.testing.assert_array_equal(final0[k], final1[k])
        np.testing.assert_allclose(final0[k], expect[k], rtol=1e-4, atol=1e-5, err_msg=k)
    # The trace says why it does not compile the step.
    assert any("megengine.distributed" in w and "run eagerly" in w for w in warned), warned


def _traced_all_reduce():
    f = trace(lambda x: F.distributed.all_reduce_sum(x) * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [
            f(mge.Tensor(rank_input(dist.get_rank(), (3,), "float32", salt=s))).numpy()
            for s in range(3)
        ]


def test_traced_all_reduce_runs_on_every_call():
    results = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(_traced_all_reduce)()
    for s in range(3):
        expect = 2 * sum(rank_input(r, (3,), "float32", salt=s) for r in range(WORLD))
        for res in results:
            np.testing.assert_array_equal(res[s], expect)
