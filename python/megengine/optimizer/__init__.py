"""``megengine.optimizer`` (``optim``): optimizers, learning-rate schedulers and gradient
clipping. Updates run as tensor ops and write parameters in place (``Tensor._reset``)."""

from .adagrad import Adadelta, Adagrad
from .adam import Adam, AdamW
from .clip_grad import clip_grad_norm, clip_grad_value
from .lamb import LAMB, LAMBFp16
from .lr_scheduler import LRScheduler, MultiStepLR
from .optimizer import Optimizer
from .sgd import SGD

__all__ = [
    "LAMB",
    "SGD",
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "LAMBFp16",
    "LRScheduler",
    "MultiStepLR",
    "Optimizer",
    "clip_grad_norm",
    "clip_grad_value",
]
