"""Graph passes for inference: ``optimize``."""

from .optimize import optimize

__all__ = ["optimize"]
