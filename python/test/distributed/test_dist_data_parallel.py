"""Data-parallel training (make_allreduce_cb, bcast_list_) gives the parameters of
single-process training on the concatenated batch."""

import numpy as np
from dist_util import TIMEOUT

import megengine as mge
import megengine.distributed as dist
import megengine.functional as F
import megengine.module as M
import megengine.optimizer as optim
from megengine.autodiff import GradManager

WORLD = 2
PER_RANK = 4
STEPS = 3


class SmallCNN(M.Module):
    def __init__(self):
        super().__init__()
        self.conv = M.Conv2d(1, 4, 3, padding=1)
        self.fc = M.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        x = F.relu(self.conv(x))
        return self.fc(F.flatten(x, 1))


def _batches():
    rng = np.random.RandomState(0)
    data = rng.randn(STEPS, WORLD * PER_RANK, 1, 6, 6).astype("float32")
    labels = rng.randint(0, 5, size=(STEPS, WORLD * PER_RANK)).astype("int32")
    return data, labels


def _state(model):
    return {k: np.array(v) for k, v in model.state_dict().items()}  # numpy, as in MegEngine


def _train(model, gm, opt, data, labels):
    for x, y in zip(data, labels):
        with gm:
            loss = F.nn.cross_entropy(model(mge.Tensor(x)), mge.Tensor(y))
            gm.backward(loss)
        opt.step().clear_grad()


def _worker(reduce_method):
    r = dist.get_rank()
    model = SmallCNN()  # each rank starts from its own random init...
    dist.bcast_list_(list(model.parameters()))  # ...and takes rank 0's
    initial = _state(model)
    gm = GradManager().attach(model.parameters(), callbacks=[dist.make_allreduce_cb(reduce_method)])
    lr = 0.1 if reduce_method == "mean" else 0.1 / WORLD
    opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    data, labels = _batches()
    shard = slice(r * PER_RANK, (r + 1) * PER_RANK)
    _train(model, gm, opt, data[:, shard], labels[:, shard])
    return initial, _state(model)


def _single(initial):
    model = SmallCNN()
    model.load_state_dict({k: mge.Tensor(v) for k, v in initial.items()})
    gm = GradManager().attach(model.parameters())
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _train(model, gm, opt, *_batches())
    return _state(model)


def test_data_parallel_equals_single_process_on_the_whole_batch():
    for method in ("mean", "sum"):
        results = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(_worker)(method)
        (init0, final0), (init1, final1) = results
        for k in init0:
            np.testing.assert_array_equal(init0[k], init1[k])  # bcast_list_ synchronised them
            np.testing.assert_array_equal(final0[k], final1[k])  # identical updates
        expect = _single(init0)
        for k in expect:
            assert not np.allclose(expect[k], init0[k]), k  # training moved every parameter
            np.testing.assert_allclose(final0[k], expect[k], rtol=1e-4, atol=1e-5, err_msg=k)


def _default_shards():
    from megengine.data import RandomSampler, SequentialSampler

    return (
        list(SequentialSampler(range(10), batch_size=3)),
        list(RandomSampler(range(10), batch_size=4)),
    )


def test_samplers_shard_by_the_process_groups_rank_by_default():
    from megengine.data import RandomSampler, SequentialSampler

    for world in (2, 3):
        results = dist.launcher(n_gpus=world, timeout=TIMEOUT)(_default_shards)()
        seen = []
        for r, (seq, rnd) in enumerate(results):
            assert seq == list(SequentialSampler(range(10), 3, world_size=world, rank=r))
            assert rnd == list(RandomSampler(range(10), 4, world_size=world, rank=r))
            seen += [i for batch in seq for i in batch]
        assert sorted(set(seen)) == list(range(10))  # the shards cover the dataset
    # Outside a process group: one shard, everything.
    assert list(SequentialSampler(range(3), batch_size=2)) == [[0, 1], [2]]
