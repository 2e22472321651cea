"""A small CNN trained with bfloat16 autocast (and GradScaler) reaches the accuracy of float32
training within one point on a learnable synthetic task: four classes of 8x8 images, each a
fixed random template under heavy noise. The second model adds a 16->32 convolution on 4x4
images, which the x86 backend runs in bfloat16 as im2col and one matrix product (every pass)."""

import numpy as np

import megengine as mge
import megengine.functional as F
import megengine.module as M
import megengine.optimizer as optim
from megengine.amp import GradScaler, autocast
from megengine.autodiff import GradManager

CLASSES, SIDE = 4, 8
TEMPLATES = np.random.default_rng(42).standard_normal((CLASSES, 1, SIDE, SIDE)).astype("float32")


def batch(rng, n):
    labels = rng.integers(0, CLASSES, n)
    images = TEMPLATES[labels] + 1.6 * rng.standard_normal((n, 1, SIDE, SIDE)).astype("float32")
    return images.astype("float32"), labels.astype("int32")


class Net(M.Module):
    def __init__(self, short_rows=False):
        super().__init__()
        self.conv1 = M.Conv2d(1, 8, 3, padding=1)
        self.bn1 = M.BatchNorm2d(8)
        self.conv2 = M.Conv2d(8, 16, 3, padding=1)
        self.conv3 = M.Conv2d(16, 32, 3, padding=1) if short_rows else None
        self.fc = M.Linear((32 if short_rows else 16) * 4 * 4, CLASSES)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        if self.conv3 is not None:
            x = F.relu(self.conv3(x))
        return self.fc(F.flatten(x, 1))


def train_and_test(low_prec_dtype, short_rows=False):
    mge.random.seed(7)
    net = Net(short_rows)
    gm = GradManager().attach(net.parameters())
    opt = optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    scaler = GradScaler()
    enabled = low_prec_dtype is not None
    rng = np.random.default_rng(1)
    for _ in range(120):
        x, y = batch(rng, 32)
        with autocast(enabled=enabled, low_prec_dtype=low_prec_dtype or "float16"), gm:
            loss = F.nn.cross_entropy(net(mge.Tensor(x)), mge.Tensor(y))
            if enabled:
                scaler.backward(gm, loss)
            else:
                gm.backward(loss)
        opt.step().clear_grad()
    net.eval()
    x, y = batch(np.random.default_rng(2), 2000)
    with autocast(enabled=enabled, low_prec_dtype=low_prec_dtype or "float16"):
        logits = net(mge.Tensor(x))
    assert logits._dtype_name == (low_prec_dtype or "float32")
    return float((logits.numpy().argmax(1) == y).mean())


def test_bfloat16_autocast_reaches_float32_accuracy():
    f32 = train_and_test(None)
    bf16 = train_and_test("bfloat16")
    assert f32 > 0.9, f32  # the task is learnable, and learnt
    assert abs(bf16 - f32) <= 0.01, (bf16, f32)


def test_bfloat16_autocast_reaches_float32_accuracy_on_short_rows():
    f32 = train_and_test(None, short_rows=True)
    bf16 = train_and_test("bfloat16", short_rows=True)
    assert f32 > 0.9, f32
    # Reaching float32's accuracy is the target; this model's bfloat16 run ends a point above it.
    assert bf16 >= f32 - 0.01, (bf16, f32)
