"""Data loading: datasets, samplers, transforms, collation and the DataLoader."""

from . import dataset, transform
from .collator import Collator
from .dataloader import DataLoader, WorkerInfo, get_worker_info
from .sampler import (
    Infinite,
    MapSampler,
    RandomSampler,
    ReplacementSampler,
    Sampler,
    SequentialSampler,
    StreamSampler,
)

__all__ = [
    "Collator",
    "DataLoader",
    "Infinite",
    "MapSampler",
    "RandomSampler",
    "ReplacementSampler",
    "Sampler",
    "SequentialSampler",
    "StreamSampler",
    "WorkerInfo",
    "dataset",
    "get_worker_info",
    "transform",
]
