"""Datasets: abstract types and the vision datasets."""

from .meta_dataset import ArrayDataset, ConcatDataset, Dataset, StreamDataset
from .vision import CIFAR10, CIFAR100, MNIST, FashionMNIST, ImageFolder, VisionDataset

__all__ = [
    "CIFAR10",
    "CIFAR100",
    "MNIST",
    "ArrayDataset",
    "ConcatDataset",
    "Dataset",
    "FashionMNIST",
    "ImageFolder",
    "StreamDataset",
    "VisionDataset",
]
