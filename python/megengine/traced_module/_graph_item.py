"""What Exprs and Nodes share as the items of a traced graph: a numbering of their own (ids
from 0 per class, saved and restored with a graph), a weak reference to the graph that holds
them, dropped when pickled or deep-copied (the graph sets it again)."""

import copy
import weakref


class _GraphItem:
    _top_graph = None
    _total_id = 0

    def _take_id(self, counter_cls):
        # ids count per counter class (every Expr, every Node), not per subclass
        self._id = counter_cls._total_id
        counter_cls._total_id += 1

    @classmethod
    def _get_next_id(cls):
        return cls._total_id

    @classmethod
    def _set_next_id(cls, value=0):
        cls._total_id = int(value)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_top_graph"] = None
        return state

    def __deepcopy__(self, memo):
        result = type(self).__new__(type(self))
        memo[id(self)] = result
        for k, v in self.__dict__.items():
            if not isinstance(v, weakref.ReferenceType):
                setattr(result, k, copy.deepcopy(v, memo))
        result._top_graph = None
        return result
