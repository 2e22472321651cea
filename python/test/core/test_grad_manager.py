"""GradManager against closed forms and finite differences."""

import numpy as np
import pytest
from gradcheck import numeric_grad

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager
from megengine.autodiff.grad_manager import GradManagerGroup


def test_backward_accumulates_into_grad():
    w = mge.Parameter([1.0, -2.0])
    gm = GradManager().attach(w)
    for _ in range(2):
        with gm:
            gm.backward((w * w).sum())
    np.testing.assert_allclose(w.grad.numpy(), [4.0, -8.0])


def test_mlp_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    xv = rng.normal(size=(4, 3)).astype(np.float32)
    w1v = rng.normal(size=(3, 5)).astype(np.float32)
    w2v = rng.normal(size=(5, 2)).astype(np.float32)

    def loss_fn(x, w1, w2):
        h = F.tanh(F.matmul(x, w1))
        return (F.matmul(h, w2) ** 2).mean()

    w1, w2 = mge.Parameter(w1v), mge.Parameter(w2v)
    gm = GradManager().attach([w1, w2])
    with gm:
        gm.backward(loss_fn(mge.Tensor(xv), w1, w2))
    num1 = numeric_grad(lambda v: loss_fn(mge.Tensor(xv), mge.Tensor(v), w2v).item(), w1v)
    num2 = numeric_grad(lambda v: loss_fn(mge.Tensor(xv), w1v, mge.Tensor(v)).item(), w2v)
    np.testing.assert_allclose(w1.grad.numpy(), num1, rtol=2e-2, atol=2e-3)
    np.testing.assert_allclose(w2.grad.numpy(), num2, rtol=2e-2, atol=2e-3)


def test_second_order_with_nested_managers():
    x = mge.Parameter([0.5, -1.0])
    outer, inner = GradManager().attach(x), GradManager().attach(x)
    with outer:
        with inner:
            inner.backward((x**3).sum())
        dx = x.grad  # 3x^2, recorded by outer
        x.grad = None
        outer.backward(dx.sum())
    np.testing.assert_allclose(x.grad.numpy(), [3.0, -6.0], rtol=1e-5)  # 6x


def test_callbacks_and_unused_tensors():
    a, b = mge.Parameter([1.0]), mge.Parameter([2.0])
    gm = GradManager().attach([a], callbacks=lambda t, g: g * 10).attach(b)
    with gm:
        gm.backward(a * 3)
    np.testing.assert_allclose(a.grad.numpy(), [30.0])
    assert b.grad is None


def test_callbacks_run_as_each_gradient_becomes_final():
    # y = f(x * w1) * w2 with f an autodiff.Function that logs its backward: w2's gradient is
    # final (and its callback runs) before backward reaches f; w1's only after.
    from megengine.autodiff import Function

    log = []

    class Logged(Function):
        def forward(self, x):
            return x * 1

        def backward(self, dy):
            log.append("f.backward")
            return dy

    w1, w2 = mge.Parameter([2.0]), mge.Parameter([3.0])
    x = mge.Tensor([5.0])

    def cb(name):
        def record(t, g):
            log.append(name)
            return g

        return record

    gm = GradManager().attach([w1], callbacks=cb("w1")).attach([w2], callbacks=cb("w2"))
    with gm:
        gm.backward(Logged()(x * w1) * w2)
    assert log == ["w2", "f.backward", "w1"]
    np.testing.assert_allclose(w1.grad.numpy(), [15.0])
    np.testing.assert_allclose(w2.grad.numpy(), [10.0])


def test_dy_and_errors():
    x = mge.Parameter([1.0, 2.0])
    gm = GradManager().attach(x)
    with gm:
        gm.backward(x * x, dy=mge.Tensor([1.0, -1.0]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -4.0])
    with pytest.raises(RuntimeError, match="outside of recording"):
        gm.backward(x)
    with pytest.raises(TypeError, match="expects Tensors"):
        gm.attach([1.0])
    ints = mge.Tensor([1, 2])
    with pytest.raises(TypeError, match="float dtypes only"), GradManager().attach(ints):
        pass


def test_dy_that_broadcasts_to_y_or_has_its_elements():
    # MegEngine 1.13 takes these output gradients (its results in the comments): one that
    # broadcasts to y (a scalar or (1,) for a batch of outputs; relu(2 x) with dy [1.0] gives
    # [2, 0]) or y's elements in another layout ((1, 2) for (2,), (1,) for a scalar).
    def grad(x, dy, f=lambda t: F.relu(t * 2)):
        x = mge.Tensor(x)
        gm = GradManager().attach(x)
        with gm:
            gm.backward(f(x), dy)
        return x.grad.numpy().tolist()

    assert grad([1.0, -1.0], mge.Tensor([1.0])) == [2.0, 0.0]
    assert grad([1.0, -1.0], mge.Tensor(3.0)) == [6.0, 0.0]
    assert grad([1.0, 2.0], mge.Tensor([[1.0, 2.0]]), lambda t: t * 2) == [2.0, 4.0]
    assert grad(1.0, mge.Tensor([5.0]), lambda t: t * 2) == 10.0
    assert grad([[1.0, 2.0, 3.0]] * 2, mge.Tensor([[1.0], [2.0]]), lambda t: t * 2) == [
        [2.0, 2.0, 2.0],
        [4.0, 4.0, 4.0],
    ]
    for bad in ([1.0, 2.0, 3.0], [[1.0, 2.0]] * 2):
        with pytest.raises(ValueError, match="backward: gradient of shape"):
            grad([1.0, 2.0], mge.Tensor(bad), lambda t: t * 2)


def test_indexing_is_differentiable():
    x = mge.Parameter(np.arange(6, dtype=np.float32).reshape(2, 3))
    gm = GradManager().attach(x)
    with gm:
        gm.backward((x[:, 1] * 2).sum() + x[1, 2])
    np.testing.assert_allclose(x.grad.numpy(), [[0, 2, 0], [0, 2, 1]])


def test_reset_keeps_identity_and_attachment():
    w = mge.Parameter([1.0, 2.0])
    gm = GradManager().attach(w)
    w._reset(w - 1)  # what an optimizer step does
    np.testing.assert_array_equal(w.numpy(), [0.0, 1.0])
    with gm:
        gm.backward((w * w).sum())
    np.testing.assert_allclose(w.grad.numpy(), [0.0, 2.0])


@pytest.mark.parametrize("make", [mge.Tensor, mge.Parameter, mge.tensor])
def test_tensor_made_from_a_tensor_is_a_new_tensor(make):
    # MegEngine 1.13's results in the comments. A copy made outside a recording, once the
    # source has been attached before, carries no gradient to it (a target network's copy of a
    # parameter): p.grad stays None.
    p = mge.Parameter([1.0, 2.0])
    gm = GradManager().attach(p)
    with gm:
        gm.backward((p * 1).sum())
    p.grad = None
    c = make(p)
    with gm:
        gm.backward((c * 3).sum())
    assert p.grad is None

    # Made inside a recording, the copy passes gradients to its source (x.grad [12, 14]) but is
    # a tensor of its own: attaching it is not attaching y (c.grad [1, 4], the other factor).
    x = mge.Parameter([1.0, 2.0])
    gm = GradManager().attach(x)
    with gm:
        y = x * x
        c = make(y)
        gm.attach(c)
        gm.backward((c * y).sum())
    np.testing.assert_allclose(c.grad.numpy(), [1.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 32.0])

    # Attached but unused: no gradient (y's would be [2, 8]).
    x.grad = None
    with gm:
        y = x * x
        c = make(y)
        gm.attach(c)
        gm.backward((y * y).sum())
    assert c.grad is None
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 32.0])


def test_setitem_is_differentiable():
    x = mge.Parameter([1.0, 2.0, 3.0])
    v = mge.Parameter([10.0])
    gm = GradManager().attach([x, v])
    with gm:
        y = x * 2
        y[1] = v * 3  # y = [2x0, 3v, 2x2]
        gm.backward((y * mge.Tensor([1.0, 2.0, 4.0])).sum())
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 0.0, 8.0])
    np.testing.assert_allclose(v.grad.numpy(), [6.0])


def test_function_uses_its_own_backward():
    from megengine.autodiff import Function

    class ClippedSquare(Function):  # backward deliberately not the true derivative
        def forward(self, x, y):
            self.x = x
            return x * x + y, x - y

        def backward(self, da, db):
            return da * 2 * self.x + db, None  # no gradient for y

    x, y = mge.Parameter([1.0, -2.0]), mge.Parameter([3.0, 4.0])
    gm = GradManager().attach([x, y])
    with gm:
        a, b = ClippedSquare()(x, y)
        np.testing.assert_allclose(a.numpy(), [4.0, 8.0])
        gm.backward((a * 3).sum() + b.sum())
    np.testing.assert_allclose(x.grad.numpy(), [7.0, -11.0])  # 3 * 2x + 1
    assert y.grad is None


def test_function_returning_its_input_is_still_the_function():
    from megengine.autodiff import Function

    # forward returns its input itself; the gradient must still go through this backward (here
    # none at all, then a scaled one), not around it along the input's own history.
    class StopGradient(Function):
        def forward(self, a):
            return a

        def backward(self, *_):
            return None

    class Halve(Function):
        def forward(self, a):
            return a

        def backward(self, dy):
            return dy * 0.5

    for fn, want in [(StopGradient(), 4.0), (Halve(), 3.0 * 0.5 + 4.0)]:
        x = mge.Parameter([1.0])
        gm = GradManager().attach(x)
        with gm:
            b = x * 3.0
            y = fn(b)
            assert y is not b and y.tolist() == b.tolist()
            gm.backward((y + x * 4.0).sum())
        np.testing.assert_allclose(x.grad.numpy(), [want])


def test_assignment_to_an_attached_tensor_differentiates_the_attached_value():
    # x[0] = 5 (or F.scatter, which assigns in place) makes x stand for the new value, but
    # x.grad is still the gradient of the value attached: MegEngine 1.13 gives [0, 2, 3] here,
    # the overwritten element getting none.
    w = mge.Tensor([1.0, 2.0, 3.0])
    for assign in (
        lambda x: x.__setitem__(0, 5.0),
        lambda x: F.scatter(x, 0, mge.Tensor([0], dtype="int32"), mge.Tensor([5.0])),
    ):
        x = mge.Parameter([1.0, 1.0, 1.0])
        gm = GradManager().attach(x)
        with gm:
            assign(x)
            gm.backward((x * w).sum())
        assert x.tolist() == [5.0, 1.0, 1.0]
        np.testing.assert_array_equal(x.grad.numpy(), [0.0, 2.0, 3.0])
    # attached during recording, assigned twice
    x = mge.Parameter([2.0, 2.0])
    gm = GradManager()
    with gm:
        gm.attach(x)
        x[1] = x[0] * 3.0
        x[0] = 1.0
        gm.backward((x * mge.Tensor([10.0, 100.0])).sum())
    np.testing.assert_array_equal(x.grad.numpy(), [300.0, 0.0])


def test_function_errors():
    from megengine.autodiff import Function

    class Bad(Function):
        def forward(self, x):
            return [1.0]

    with pytest.raises(TypeError, match="must return Tensors"):
        Bad()(mge.Tensor([1.0]))

    class WrongCount(Function):
        def forward(self, x):
            return x * 1

        def backward(self, dy):
            return dy, dy

    x = mge.Parameter([1.0])
    gm = GradManager().attach(x)
    with pytest.raises(ValueError, match="returned 2 gradients for 1 inputs"), gm:
        gm.backward(WrongCount()(x))


def test_function_inside_nested_managers():
    from megengine.autodiff import Function

    class Cube(Function):
        def forward(self, x):
            self.x = x
            return x * x * x

        def backward(self, dy):
            return dy * 3 * self.x * self.x

    x = mge.Parameter([2.0])
    outer = GradManager().attach(x)
    with outer:
        inner = GradManager().attach(x)
        with inner:
            inner.backward(Cube()(x))
        assert x.grad.numpy().tolist() == [12.0]  # 3x^2
        # forward kept x itself, so the outer manager recorded the backward's 3x^2 in terms of
        # x: its backward adds d(3x^2)/dx = 6x (MegEngine 1.13 gives 24 too)
        outer.backward(x.grad)
    assert x.grad.numpy().tolist() == [24.0]


def test_function_backward_calling_a_function_is_differentiable():
    from megengine.autodiff import Function

    class Sin(Function):
        def forward(self, x):
            self.x = x
            return F.sin(mge.Tensor(x.numpy()))

        def backward(self, dy):
            return F.cos(self.x) * dy

    class Cos(Function):
        def forward(self, x):
            self.x = x
            return F.cos(mge.Tensor(x.numpy()))

        def backward(self, dy):
            return -Sin()(self.x) * dy

    x_np = np.array([0.3, 1.2, -2.0], dtype=np.float32)
    x = mge.Parameter(x_np)
    outer, inner = GradManager().attach(x), GradManager().attach(x)
    with outer:
        with inner:
            inner.backward(Cos()(x))
        np.testing.assert_allclose(x.grad.numpy(), -np.sin(x_np), rtol=1e-6)
        outer.backward(x.grad)  # adds d(-sin x)/dx through Sin's own backward
    np.testing.assert_allclose(x.grad.numpy(), -np.sin(x_np) - np.cos(x_np), rtol=1e-6)


def test_function_forward_records_nothing():
    from megengine.autodiff import Function

    class Opaque(Function):
        # the ops here would give 2x if recorded; the declared backward says 5
        def forward(self, x):
            return x * x

        def backward(self, dy):
            return dy * 5

    x = mge.Parameter([3.0])
    gm = GradManager().attach(x)
    with gm:
        gm.backward(Opaque()(x))
    assert x.grad.numpy().tolist() == [5.0]


def _second_pass(mode):
    # gm1's backward pass, then gm2's backward of (gm1's gradient + w): whether gm2 recorded
    # gm1's backward decides the answer (values from MegEngine 1.13: group 1, nested 19).
    w = mge.Parameter([3.0])
    gm1, gm2 = GradManager().attach(w), GradManager().attach(w)
    if mode == "group":
        with gm1 | gm2:
            gm1.backward(w * w * w)  # w.grad = 3 w^2
            g, w.grad = w.grad, None
            gm2.backward(g + w)
    else:
        with gm2:
            with gm1:
                gm1.backward(w * w * w)
                g, w.grad = w.grad, None
            gm2.backward(g + w)
    return w.grad.numpy().tolist()


def test_newer_manager_does_not_record_an_older_ones_backward():
    # gm_old starts recording first, so gm_new (started inside it) does not record gm_old's
    # backward: gm_new sees gm_old's gradient 3w^2 as a constant and d(g + w)/dw is 1 (MegEngine
    # 1.13 gives 1; the other nesting, in _second_pass, gives 3*2w + 1 = 19).
    w = mge.Parameter([3.0])
    gm_old, gm_new = GradManager().attach(w), GradManager().attach(w)
    with gm_old, gm_new:
        gm_old.backward(w * w * w)
        g, w.grad = w.grad, None
        assert g.numpy().tolist() == [27.0]
        gm_new.backward(g + w)
    assert w.grad.numpy().tolist() == [1.0]


def test_attach_rejects_integer_tensors_as_megengine_does():
    from megengine.autodiff.grad_manager import NonDifferentiableError

    for dtype in ("int32", "uint8", "int8", "bool"):
        t = mge.Tensor(np.zeros(2), dtype=dtype)
        # MegEngine asserts; ours is a TypeError that is an AssertionError too
        with pytest.raises(AssertionError, match=f"got dtype {dtype}"):
            GradManager().attach(t)
        assert issubclass(NonDifferentiableError, TypeError)
    floats = [mge.Tensor([1.0], dtype="float16"), mge.Tensor([1.0])]
    assert len(GradManager().attach(floats).attached_tensors()) == 2


def test_grad_manager_group_records_both_but_not_each_others_backward():
    assert _second_pass("group") == [1.0]
    assert _second_pass("nested") == [19.0]
    a, b = mge.Parameter([2.0]), mge.Parameter([3.0])
    gm_a, gm_b = GradManager().attach(a), GradManager().attach(b)
    with gm_a | gm_b:
        gm_a.backward(a * b)
        gm_b.backward(a * b * b)
    assert a.grad.numpy().tolist() == [3.0] and b.grad.numpy().tolist() == [12.0]
    assert gm_a._key is None and gm_b._key is None  # both released on exit


def test_grad_manager_group_merges_and_rejects_others():
    gm1, gm2, gm3 = GradManager(), GradManager(), GradManager()
    group = gm1 | gm2 | gm3
    assert isinstance(group, GradManagerGroup) and group._gms == [gm1, gm2, gm3]
    assert (gm3 | (gm1 | gm2))._gms == [gm1, gm2, gm3]
    with pytest.raises(TypeError):
        gm1 | 3
    with pytest.raises(TypeError):
        group | "x"
    gm1.record()
    with pytest.raises(RuntimeError, match="already recording"), gm2 | gm1:
        pass
    assert gm2._key is None  # the members entered before the failure are released
    gm1.release()


def test_function_backward_gets_none_for_an_output_without_gradient():
    from megengine.autodiff import Function

    seen = []

    class Split(Function):
        def forward(self, a, b):
            return a * 2, b * 3

        def backward(self, grad_a, grad_b):
            seen.append(grad_b)
            return grad_a * 2, None if grad_b is None else grad_b * 3

    a, b = mge.Parameter([1.0, 2.0]), mge.Parameter([5.0])
    gm = GradManager().attach([a, b])
    with gm:
        first, _ = Split()(a, b)
        gm.backward(first.sum())
    assert seen == [None]
    assert a.grad.numpy().tolist() == [2.0, 2.0]
    assert b.grad is None


def test_function_takes_tensors_only():
    from megengine.autodiff import Function

    class AddConst(Function):
        def forward(self, x, c):
            return x + c

        def backward(self, dy):
            return dy, None

    with pytest.raises(TypeError, match="expect type Tensor as inputs, got int"):
        AddConst()(mge.Tensor([1.0]), 1)
    out = AddConst()(mge.Tensor([1.0]), mge.Tensor([2.0]))
    assert out.numpy().tolist() == [3.0]


def _grad_through(f):
    x = mge.Parameter(np.array([1.5, -2.3, 0.2], dtype="float32"))
    gm = GradManager().attach([x])
    with gm:
        gm.backward(f(x).sum())
    return x.grad


@pytest.mark.parametrize(
    "f",
    [F.floor, F.ceil, F.round, F.sign, lambda x: x // 2],
    ids=["floor", "ceil", "round", "sign", "floor_div"],
)
def test_piecewise_constant_ops_leave_grad_none_as_megengine(f):
    # MegEngine 1.13 gives None, not zeros, when these are the only path to a parameter
    assert _grad_through(f) is None


def test_integer_outputs_end_the_gradient_path():
    # a cast to an integer dtype and back is not differentiable (MegEngine: None)
    assert _grad_through(lambda x: x.astype("int32").astype("float32")) is None
    assert _grad_through(lambda x: (x > 0).astype("float32")) is None


def test_other_paths_still_flow_past_a_non_differentiable_one():
    g = _grad_through(lambda x: F.floor(x) * x + x.astype("int32"))
    np.testing.assert_allclose(g.numpy(), np.floor([1.5, -2.3, 0.2]))
    # topk's int32 indices output does not stop its float values output
    g = _grad_through(lambda x: F.topk(x, 2, descending=True)[0])
    np.testing.assert_allclose(g.numpy(), [1.0, 0.0, 1.0])
