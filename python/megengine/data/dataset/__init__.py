"""Datasets: abstract types and the vision datasets."""

from .meta_dataset import ArrayDataset, ConcatDataset, Dataset, StreamDataset
from .vision import (
    CIFAR10,
    CIFAR100,
    COCO,
    MNIST,
    Cityscapes,
    FashionMNIST,
    ImageFolder,
    ImageNet,
    Objects365,
    PascalVOC,
    VisionDataset,
)

__all__ = [
    "CIFAR10",
    "CIFAR100",
    "COCO",
    "MNIST",
    "ArrayDataset",
    "Cityscapes",
    "ConcatDataset",
    "Dataset",
    "FashionMNIST",
    "ImageFolder",
    "ImageNet",
    "Objects365",
    "PascalVOC",
    "StreamDataset",
    "VisionDataset",
]
