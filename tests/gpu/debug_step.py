"""Two CIFAR ResNet-18 training steps on gpu0; under NEOMEG_DEBUG=1 stderr names each op's kernel.

Run by tests/gpu/run_prebuilt.sh from the repository root, with bench/ importable.
"""

import sys

sys.path.insert(0, "bench")
import numpy as np
from bench_models import MODELS

import megengine as mge
import megengine.functional as F
import megengine.module as nn
from megengine.autodiff import GradManager
from megengine.optimizer import SGD

# bench_models holds its models as source text for both frameworks' workers; it names the
# framework's pieces it uses.
ns = {
    "Module": nn.Module,
    "nn": nn,
    "relu": F.relu,
    "flatten": lambda t: F.flatten(t, 1),
    "pool": F.max_pool2d,
    "avgpool": lambda t: F.mean(t, axis=(2, 3)),
}
exec(MODELS, ns)  # noqa: S102  (our own model text, as bench/train_step.py's workers run it)

mge.set_default_device("gpu0")
model = ns["ResNet18"]()
gm = GradManager().attach(model.parameters())
opt = SGD(model.parameters(), lr=0.01, momentum=0.9)
x = mge.Tensor(np.random.rand(8, 3, 32, 32).astype("float32"))
y = mge.Tensor(np.random.randint(0, 10, 8).astype("int32"))
for _ in range(2):
    with gm:
        loss = F.nn.cross_entropy(model(x), y)
        gm.backward(loss)
    opt.step().clear_grad()
print("loss", float(loss.numpy()))
