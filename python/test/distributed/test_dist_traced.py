"""Collectives inside jit.trace: a traced data-parallel training step (make_allreduce_cb) is
compiled with its all-reduce as graph ops (a start where the bucket fills, a wait after
backward) and gives the parameters of single-process training on the concatenated batch;
traced all-reduces (sum, max), all-gather and reduce-scatter compute every call's inputs, with
their gradients (max's reaches the ranks that held the maximum, all-gather's is the
reduce-scatter of the output gradients); bcast_list_ is the graph's broadcast too, so its
tensors take the root's values on every call without the recording falling back to eager."""

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


def _traced_training(pack_bytes=None):
    r = dist.get_rank()
    model = SmallCNN()
    dist.bcast_list_(list(model.parameters()))
    initial = _state(model)
    cb = dist.make_allreduce_cb("mean")
    if pack_bytes is not None:
        cb._param_pack_thd = pack_bytes
    gm = GradManager().attach(model.parameters(), callbacks=[cb])
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
    ops = [op for op, _ in step.ops]
    graph = step._graph_text().splitlines()
    return initial, _state(model), [str(w.message) for w in caught], (ops, step._mode, graph)


def test_traced_data_parallel_step_equals_single_process_training():
    (init0, final0, warned, ops), (_, final1, _, _) = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(
        _traced_training
    )()
    expect = _single(init0)
    for k in expect:
        assert not np.allclose(expect[k], init0[k]), k
        np.testing.assert_array_equal(final0[k], final1[k])
        np.testing.assert_allclose(final0[k], expect[k], rtol=1e-4, atol=1e-5, err_msg=k)
    # Compiled, not run eagerly: the gradients' all-reduce is an op of the graph (one bucket),
    # which the later steps (replays of the graph) ran with their own gradients.
    assert warned == []
    assert ops[0].count("AllReduceStart(0)") == 1
    assert ops[0].count("AllReduceWait(0)") == 1
    assert ops[1] == "graph"  # the later calls replayed the compiled graph
    # The start op reads the 4 gradients and copies them into its own output, all-reduced in
    # place there: no bucket-sized Concat before it.
    graph = ops[2]
    start = next(line for line in graph if "AllReduceStart(0)" in line)
    assert start.count("%") == 5, start  # its output and the 4 gradients
    bucket = start.split(" : ")[1]  # {765} float32
    assert not any("Concat" in line and line.endswith(bucket) for line in graph), graph
    # The wait op hands out the gradients themselves (the mean's division and the split are
    # in it): the optimizer's update reads its outputs, no copy, division or slice between.
    wait = next(line for line in graph if "AllReduceWait(0)" in line)
    outs = wait.split(" = ")[0].split(", ")
    assert len(outs) == 4, wait  # SmallCNN's 4 gradients
    readers = [line for line in graph if any(f"{o})" in line or f"{o}," in line for o in outs)]
    readers = [line for line in readers if line is not wait]
    assert readers and all("FUSE_MUL_ADD3" in line for line in readers), readers


def _bucket_grads(initial, method, traced, data, labels):
    model = SmallCNN()
    model.load_state_dict({k: mge.Tensor(v) for k, v in initial.items()})
    params = list(model.parameters())
    cb = dist.make_allreduce_cb(method)
    cb._param_pack_thd = 1000  # two buckets of two gradients
    gm = GradManager().attach(params, callbacks=[cb])
    opt = optim.SGD(params, lr=0.0)

    def step(x, y):
        with gm:
            gm.backward(F.nn.cross_entropy(model(x), y))
        out = [p.grad * 1 for p in params]
        opt.clear_grad()
        return out

    run = trace(step, symbolic=True) if traced else step
    return [[g.numpy() for g in run(mge.Tensor(x), mge.Tensor(y))] for x, y in zip(data, labels)]


def _traced_and_eager_grads(method):
    r = dist.get_rank()
    data, labels = _batches()
    shard = slice(r * PER_RANK, (r + 1) * PER_RANK)
    # Each rank's own initial parameters (their sums still agree), the same in every launch.
    mge.random.seed(10 + r)
    np.random.seed(10 + r)
    initial = _state(SmallCNN())
    return {
        traced: _bucket_grads(initial, method, traced, data[:, shard], labels[:, shard])
        for traced in (False, True)
    }


def test_traced_buckets_give_the_eager_sums_and_means():
    for method in ("sum", "mean"):
        results = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(_traced_and_eager_grads)(method)
        for grads in results:
            for traced_step, eager_step in zip(grads[True], grads[False]):
                for t, e in zip(traced_step, eager_step):
                    np.testing.assert_allclose(t, e, rtol=1e-5, atol=1e-7, err_msg=method)
        # The ranks' sums agree, and a mean is the sum over the group's size.
        for a, b in zip(results[0][True][0], results[1][True][0]):
            np.testing.assert_array_equal(a, b)
        if method == "sum":
            sums = results[0][True]
        else:
            for s, m in zip(sums, results[0][True]):
                for a, b in zip(s, m):
                    np.testing.assert_allclose(b, a / WORLD, rtol=1e-5, atol=1e-7)


def test_traced_step_starts_each_bucket_during_backward_and_waits_after_it():
    # One bucket per gradient (a pack threshold of 0 bytes): each bucket's all-reduce starts
    # as soon as its gradient is computed. The compiled graph runs its steps in this order, so
    # the first buckets' communication (on the communicator's thread) runs while the steps
    # after their start compute the remaining gradients; the waits come after all of them.
    results = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(_traced_training)(0)
    (init0, final0, warned, (_, mode, graph)), (_, final1, _, _) = results
    assert warned == [] and mode == "graph"
    expect = _single(init0)
    for k in expect:
        np.testing.assert_array_equal(final0[k], final1[k])
        np.testing.assert_allclose(final0[k], expect[k], rtol=1e-4, atol=1e-5, err_msg=k)
    starts = [i for i, line in enumerate(graph) if "AllReduceStart(" in line]
    waits = [i for i, line in enumerate(graph) if "AllReduceWait(" in line]
    backward = [i for i, line in enumerate(graph) if "Backward" in line]
    assert len(starts) == len(waits) == 4, graph  # SmallCNN's 4 parameters
    assert backward, graph
    # The first bucket starts before the last gradient's backward kernel runs...
    assert starts[0] < backward[-1], graph
    # ...and every wait follows every start and every backward kernel.
    assert max(starts + backward) < min(waits), graph


def _constant_gradients(pack_bytes):
    # Gradients that depend on no input: the compiled graph folds them into constants, which
    # the bucket's start op reads on every replay. An all-reduce in place in them would add
    # the other ranks' values again on each call.
    r = dist.get_rank()
    w = mge.Parameter(np.ones((3,), dtype="float32"))
    v = mge.Parameter(np.ones((2,), dtype="float16"))
    u = mge.Parameter(np.ones((2,), dtype="float32"))
    cb = dist.make_allreduce_cb("sum")
    cb._param_pack_thd = pack_bytes
    gm = GradManager().attach([w, v, u], callbacks=[cb])
    opt = optim.SGD([w, u, v], lr=0.0)
    scale = float(r + 1)

    @trace(symbolic=True)
    def step(x):
        with gm:
            gm.backward((w * scale).sum() + (u * x).sum() + (v * (r + 2)).sum().astype("float32"))
        grads = [w.grad * 1, u.grad * 1, v.grad * 1]
        opt.clear_grad()
        return grads

    out = [[g.numpy() for g in step(mge.Tensor(np.full(2, s, "float32")))] for s in range(4)]
    return out, step._mode, step._graph_text().splitlines()


def test_a_bucket_of_constant_gradients_gives_the_same_sum_on_every_replay():
    for pack_bytes in (0, 1 << 20):  # a bucket per gradient; one bucket per dtype
        results = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(_constant_gradients)(pack_bytes)
        for grads, mode, graph in results:
            assert mode == "graph"
            for s, (w, u, v) in enumerate(grads):
                np.testing.assert_array_equal(w, np.full(3, 1.0 + 2.0, "float32"))  # sum of r+1
                np.testing.assert_array_equal(u, np.full(2, WORLD * s, "float32"))
                np.testing.assert_array_equal(v, np.full(2, 2 + 3, "float16"))  # sum of r+2
                assert v.dtype == np.float16
            # The case is the one it means to be: a start op that reads constants.
            consts = {line.split(" ")[0] for line in graph if " = const " in line}
            starts = [line for line in graph if "AllReduceStart(" in line]
            reads = [a for line in starts for a in line.split(")(")[1].split(")")[0].split(", ")]
            assert any(a in consts for a in reads), graph


def _traced_collectives():
    r = dist.get_rank()
    f = trace(lambda x: F.distributed.all_reduce_sum(x) * 2)
    g = trace(lambda x: F.distributed.all_reduce_max(x) + 1)
    h = trace(lambda x: F.distributed.all_gather(x.reshape(1, 3), axis=1) * 1)
    k = trace(lambda x: F.distributed.reduce_scatter_sum(F.concat([x] * WORLD)) + 0)
    b = trace(lambda x: F.distributed.broadcast(x) * 1)

    @trace
    def e(x):
        y = x * 1
        dist.bcast_list_([y])  # the Broadcast op, its result written back into y
        return y

    sums, maxes, gathers, scattered, bcasts, eager = [], [], [], [], [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for s in range(3):
            x = mge.Tensor(rank_input(r, (3,), "float32", salt=s))
            sums.append(f(x).numpy())
            maxes.append(g(x).numpy())
            gathers.append(h(x).numpy())
            scattered.append(k(x).numpy())
            bcasts.append(b(x).numpy())
            eager.append(e(x).numpy())
    ops = [[op for op, _ in t.ops] + [t._mode] for t in (f, g, h, k, b, e)]
    gathered = (gathers, scattered, bcasts, eager)
    return sums, maxes, gathered, ops, [str(w.message) for w in caught]


def test_traced_collectives_run_on_every_call():
    results = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(_traced_collectives)()
    for s in range(3):
        xs = [rank_input(r, (3,), "float32", salt=s) for r in range(WORLD)]
        for sums, maxes, (gathers, scattered, bcasts, eager), _, _ in results:
            np.testing.assert_array_equal(sums[s], 2 * sum(xs))
            np.testing.assert_array_equal(maxes[s], np.maximum(*xs) + 1)
            np.testing.assert_array_equal(gathers[s], np.concatenate(xs)[None])
            np.testing.assert_array_equal(scattered[s], sum(xs))
            np.testing.assert_array_equal(bcasts[s], xs[0])
            np.testing.assert_array_equal(eager[s], xs[0])
    for _, _, _, ops, warned in results:
        # Held by the graph: the all-reduces, all-gather, reduce-scatter and broadcast.
        assert ops[0][0] == "AllReduce(sum)" and ops[1][0] == "AllReduce(max)", ops
        assert "AllGather" in ops[2] and "ReduceScatter(sum)" in ops[3], ops
        assert "Broadcast(root=0)" in ops[4] and "Broadcast(root=0)" in ops[5], ops
        # bcast_list_ included: no call fell back to eager, and the later calls replayed.
        assert warned == [], warned
        assert all(t[-1] == "graph" for t in ops), ops


def _traced_all_reduce_max_grad():
    r = dist.get_rank()
    w = mge.Parameter(rank_input(r, (6,), "float32", salt=5))
    gm = GradManager().attach(w)
    opt = optim.SGD([w], lr=0.0)

    @trace(symbolic=True)
    def step(scale):
        with gm:
            gm.backward(F.distributed.all_reduce_max(w * scale).sum())
        grad = w.grad * 1
        opt.clear_grad()
        return grad

    grads = [step(mge.Tensor(float(s + 1))).numpy() for s in range(2)]
    return grads, [op for op, _ in step.ops]


def _traced_all_gather_grad():
    r = dist.get_rank()
    w = mge.Parameter(rank_input(r, (2, 3), "float32", salt=6))
    gm = GradManager().attach(w)
    opt = optim.SGD([w], lr=0.0)
    weights = mge.Tensor(np.arange(6 * WORLD, dtype="float32").reshape(2 * WORLD, 3))

    @trace(symbolic=True)
    def step(scale):
        with gm:
            gm.backward((F.distributed.all_gather(w * scale) * weights).sum())
        grad = w.grad * 1
        opt.clear_grad()
        return grad

    return [step(mge.Tensor(float(s + 1))).numpy() for s in range(2)]


def test_traced_all_gather_gradient_is_the_reduce_scatter_of_the_output_gradients():
    results = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(_traced_all_gather_grad)()
    weights = np.arange(6 * WORLD, dtype="float32").reshape(2 * WORLD, 3)
    for s in range(2):
        c = float(s + 1)
        # Every rank's loss reads rank r's rows with weights[2r:2r+2]: WORLD copies of c * that.
        for r, grads in enumerate(results):
            np.testing.assert_array_equal(grads[s], WORLD * c * weights[2 * r : 2 * r + 2])


def test_traced_all_reduce_max_gradient_reaches_the_ranks_that_held_the_maximum():
    results = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(_traced_all_reduce_max_grad)()
    ws = [rank_input(r, (6,), "float32", salt=5) for r in range(WORLD)]
    top = np.max(ws, axis=0)
    for s in range(2):
        c = float(s + 1)
        # d/dw_r sum(max_q(c w_q)) over every rank's loss: WORLD * c where rank r holds the max.
        for r, (grads, _) in enumerate(results):
            np.testing.assert_array_equal(grads[s], WORLD * c * (ws[r] == top))
    for _, ops in results:
        assert ops.count("AllReduce(max)") == 1 and ops.count("AllReduce(sum)") == 1, ops


def _traced_all_reduce_grad():
    r = dist.get_rank()
    w = mge.Parameter(rank_input(r, (4,), "float32"))
    gm = GradManager().attach(w)
    opt = optim.SGD([w], lr=0.0)

    @trace(symbolic=True)
    def step(scale):
        with gm:
            gm.backward((F.distributed.all_reduce_sum(w * scale) ** 2).sum())
        grad = w.grad * 1
        opt.clear_grad()  # every call starts without a .grad: the same graph replays
        return grad

    grads = [step(mge.Tensor(float(s + 1))).numpy() for s in range(3)]
    return grads, [op for op, _ in step.ops]


def test_traced_all_reduce_sum_backward_all_reduces_the_gradient():
    results = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(_traced_all_reduce_grad)()
    ws = [rank_input(r, (4,), "float32") for r in range(WORLD)]
    for s in range(3):
        c = float(s + 1)
        # loss = sum_r sum((sum_q c w_q)^2): d/dw_r = sum over ranks of 2 c (sum_q c w_q) * c
        total = sum(c * w for w in ws)
        expect = WORLD * 2 * c * total
        for grads, _ in results:
            np.testing.assert_allclose(grads[s], expect, rtol=1e-6)
    for _, ops in results:
        assert ops.count("AllReduce(sum)") == 2  # forward and backward, both in the graph
