from .grad_manager import GradManager

__all__ = ["GradManager"]
