"""``megengine.utils``: tools around the framework (``comp_graph_tools`` for model files)."""
