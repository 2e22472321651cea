"""``megengine.jit``: :class:`trace` turns a Python function of tensors into a compiled graph
(``src/graph``) that later calls run without the Python code; see ``tracing.py``."""

from .dtr_config import DTRConfig
from .graph_opt_config import GraphOptimizationConfig
from .sublinear_memory_config import SublinearMemoryConfig
from .tracing import TraceError, exclude_from_trace, is_tracing, trace

__all__ = [
    "DTRConfig",
    "GraphOptimizationConfig",
    "SublinearMemoryConfig",
    "TraceError",
    "exclude_from_trace",
    "is_tracing",
    "trace",
]
