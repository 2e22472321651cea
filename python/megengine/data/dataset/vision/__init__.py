"""Vision datasets."""

from .cifar import CIFAR10, CIFAR100
from .folder import ImageFolder
from .meta_vision import VisionDataset
from .mnist import MNIST, FashionMNIST

__all__ = ["CIFAR10", "CIFAR100", "MNIST", "FashionMNIST", "ImageFolder", "VisionDataset"]
