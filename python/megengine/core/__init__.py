"""The runtime core of megengine: the C++ extension ``_imperative_rt`` and the operator classes
(``megengine.core.ops.builtin``) generated from NeoMeg's operator definitions."""
