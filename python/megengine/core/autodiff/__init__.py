"""MegEngine's low-level autodiff (``megengine.core.autodiff.grad.Grad``), over the same C++
gradient tape as :class:`megengine.autodiff.GradManager`."""
