"""``megengine.utils``: helpers shared by the package's parts (``future``) and tools around the
framework (``comp_graph_tools`` for model files)."""
