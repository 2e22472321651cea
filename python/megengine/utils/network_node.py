"""The nodes of :class:`megengine.utils.network.Network`: :class:`VarNode` (a var of an edited
model) and :class:`OpNode` with one subclass per operator type, named as MegEngine 1.13's
``network_node`` names them (``ConvolutionForward``, ``Host2DeviceCopy``, ``ImmutableTensor``,
...); an operator MegEngine has no class for gets a class of its NeoMeg name.

A VarNode is symbolic: functional ops, Tensor methods and operators on it (``F.concat``,
``F.conv2d``, ``v.reshape(2, -1)``, ``v[:, 1]``, ``v * 2``) add op nodes instead of computing,
as MegEngine's do. It registers itself with the core (``array_method.register_symbolic``):
``as_tensor`` and ``_promote``, which every functional op converts its inputs with, let it
through, and ``apply`` of an op with a VarNode among its inputs calls ``_apply_symbolic`` here.
Its shape and dtype are the graph's inference (``ComputingGraph::insert`` checks each new node);
:meth:`VarNode.numpy` computes its value.
"""

import itertools

import numpy as np

from ..core import _imperative_rt as _rt
from ..core.ops import builtin
from ..core.tensor import array_method
from ..core.tensor.dtype import operand_dtype_for, promote_names

__all__ = [
    "ConstOpBase",
    "Host2DeviceCopy",
    "ImmutableTensor",
    "NetworkNode",
    "OpNode",
    "ReadOnlyOpNode",
    "VarNode",
    "str_to_mge_class",
]

_ids = itertools.count()


class NetworkNode:
    """The base of :class:`VarNode` and :class:`OpNode` (what ``NodeFilter`` yields).

    Examples:
        >>> issubclass(VarNode, NetworkNode) and issubclass(OpNode, NetworkNode)
        True
    """


class VarNode(NetworkNode):
    """A var of a :class:`~megengine.utils.network.Network`: its ``name``, the ``owner`` op node
    computing it, the op nodes using it (``users``), and its ``shape`` and ``dtype`` as the graph
    infers them (the shape dumped inputs were traced with; a dimension that depends on data
    reads as its stand-in).

    Args:
        var: MegEngine's C++ var: a VarNode's :attr:`var` (the VarNode itself), which gives
            that VarNode back; otherwise unused.
        owner_opr: the :class:`OpNode` computing it.
        name: its name.

    Examples:
        >>> import io, numpy as np
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> from megengine.jit import trace
        >>> from megengine.utils.network import Network
        >>> f = trace(lambda x: x * 2, capture_as_const=True)
        >>> _ = f(mge.Tensor(np.ones((2, 3), "float32")))
        >>> buf = io.BytesIO()
        >>> _ = f.dump(buf, arg_names=["x"], optimize_for_inference=False)
        >>> net = Network.load(io.BytesIO(buf.getvalue()))
        >>> x = net.input_vars[0]
        >>> x.name, x.shape, x.dtype
        ('x', (2, 3), dtype('float32'))
        >>> y = F.relu(x) + 1  # a new op node reading x
        >>> y.owner.type, y.shape
        ('Elemwise', (2, 3))
        >>> z = F.concat([y, net.make_const(np.zeros((1, 3)))]).T  # functional ops add nodes
        >>> z.shape
        (3, 3)
        >>> z.numpy()  # x has a value only when the dumped model runs
        Traceback (most recent call last):
        ...
        ValueError: VarNode.numpy: ...: the value depends on the input(s) x, ...
    """

    def __new__(cls, var=None, *, owner_opr=None, name=None):
        # MegEngine's VarNode(v.var) wraps v's graph var again; here the VarNode is the var.
        if isinstance(var, VarNode):
            return var
        return super().__new__(cls)

    def __init__(self, var=None, *, owner_opr=None, name=None):
        if var is self:
            return
        self.owner = owner_opr
        self.name = name
        self.users = []
        self._shape = None
        self._dtype = None
        self._dynamic = False

    @classmethod
    def load(cls, sym_var, owner_opr):
        """A VarNode of ``owner_opr`` described by ``sym_var``: ``(name, shape, dtype name,
        shape is dynamic)`` as the extension's ``network.Graph.var`` gives it.

        Examples:
            >>> v = VarNode.load(("x", (2,), "float32", False), None)
            >>> v.name, v.shape
            ('x', (2,))
        """
        obj = cls(owner_opr=owner_opr, name=sym_var[0] or None)
        obj._set_info(sym_var)
        return obj

    def _set_info(self, info):
        _, shape, dtype, dynamic = info
        self._shape = tuple(int(d) for d in shape)
        self._dtype = dtype
        self._dynamic = bool(dynamic)

    @property
    def var(self):
        """MegEngine's C++ var of this VarNode: the VarNode itself, the graph's var here
        (``VarNode(v.var)`` is ``v``).

        Examples:
            >>> v = VarNode(name="v")
            >>> v.var is v and VarNode(v.var) is v
            True
        """
        return self

    @property
    def id(self):
        """A number unique to this object (MegEngine's: ``id(self)``).

        Examples:
            >>> v = VarNode(name="v")
            >>> v.id == id(v)
            True
        """
        return id(self)

    @property
    def shape(self):
        """The inferred shape as a tuple; with :func:`~.network.set_symbolic_shape` on, a VarNode
        computing it (``GetVarShape``).

        Examples:
            >>> VarNode.load(("x", (4, 5), "int32", False), None).shape
            (4, 5)
        """
        from .network import _symbolic_shape

        if _symbolic_shape[0]:
            return _apply_symbolic(builtin.GetVarShape(), self)[0]
        return self._shape

    @property
    def partial_shape(self):
        """The inferred shape as a tuple of ints, whatever :func:`~.network.set_symbolic_shape`
        says.

        Examples:
            >>> VarNode.load(("x", (4, 5), "int32", False), None).partial_shape
            (4, 5)
        """
        return self._shape

    def shapeof(self, axis):
        """A VarNode computing dimension ``axis`` of this var's shape.

        Examples:
            >>> v = Host2DeviceCopy((4, 5), "float32", "x").outputs[0]
            >>> v.shapeof(1).shape
            (1,)
        """
        return _apply_symbolic(builtin.GetVarShape(axes=[axis]), self)[0]

    @property
    def dtype(self):
        """The inferred dtype as a numpy dtype (``"bfloat16"`` stays a name; a quantized one is
        its storage dtype with MegEngine's ``mgb_dtype`` metadata, as a quantized Tensor's).

        Examples:
            >>> VarNode.load(("x", (1,), "int32", False), None).dtype
            dtype('int32')
            >>> VarNode.load(("q", (1,), "QuantizedS8(0.5)", False), None).dtype.metadata
            mappingproxy({'mgb_dtype': {'name': 'QuantizedS8', 'scale': 0.5}})
        """
        if self._dtype is None:
            return None
        if self._dtype == "bfloat16":
            return self._dtype
        if self._dtype.startswith("Quantized"):
            return _rt.InferenceModel.numpy_dtype(self._dtype)
        return np.dtype(self._dtype)

    @property
    def ndim(self):
        """The number of dimensions.

        Examples:
            >>> VarNode.load(("x", (4, 5), "float32", False), None).ndim
            2
        """
        return None if self._shape is None else len(self._shape)

    @property
    def _dtype_name(self):
        # What the core's Tensor code reads (``Tensor._dtype_name``).
        return self._dtype

    @property
    def size(self):
        """The number of elements (of the inferred shape).

        Examples:
            >>> VarNode.load(("x", (4, 5), "float32", False), None).size
            20
        """
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def device(self):
        """Where :meth:`numpy` computes: ``"cpu0"`` (the model itself is device-neutral).

        Examples:
            >>> VarNode.load(("x", (1,), "float32", False), None).device
            'cpu0'
        """
        return "cpu0"

    def numpy(self):
        """The value: the network's graph of what this var needs, compiled and run once.

        Returns:
            a numpy array.

        Raises:
            ValueError: the value depends on an input (a ``Host2DeviceCopy``), which has no
                value until the dumped model is run with it fed.

        Examples:
            >>> from megengine.utils.network import Network
            >>> net = Network()
            >>> a = net.make_const(np.array([[1, 2], [3, 4]], "int32"))
            >>> (a.T * 10 + a).numpy()
            array([[11, 32],
                   [23, 44]], dtype=int32)
        """
        from .network import _build

        graph, index = _build([self])
        try:
            return graph.run([index[self]])[0]
        except ValueError as e:
            raise ValueError(f"VarNode.numpy: {self!r}: {e}") from None

    def detach(self):
        """The var itself: a network computes no gradients, so there is nothing to cut (what
        functional code that detaches a tensor, such as ``F.logsumexp``, needs).

        Examples:
            >>> v = VarNode(name="v")
            >>> v.detach() is v
            True
        """
        return self

    def _assign(self, value):
        # ``x[i] = v`` (core/tensor/indexing.py's setitem) makes x stand for the var ``value``
        # computed from it, as MegEngine's VarNode._reset does: this object moves to value's
        # place, and a new VarNode takes its old place, read by the nodes that read it before
        # (value's own op node among them).
        if not isinstance(value, VarNode):
            raise TypeError(f"a VarNode can only be assigned a VarNode, got {type(value).__name__}")
        old = VarNode(owner_opr=self.owner, name=self.name)
        old._shape, old._dtype, old._dynamic = self._shape, self._dtype, self._dynamic
        old.users = self.users
        if self.owner is not None:
            self.owner.outputs = [old if v is self else v for v in self.owner.outputs]
        for node in old.users:
            node.inputs = [old if v is self else v for v in node.inputs]
        self.owner, self.name, self.users = value.owner, value.name, value.users
        self._shape, self._dtype, self._dynamic = value._shape, value._dtype, value._dynamic
        self.owner.outputs = [self if v is value else v for v in self.owner.outputs]
        for node in self.users:
            node.inputs = [self if v is value else v for v in node.inputs]

    def __setitem__(self, index, value):
        from ..core.tensor.indexing import setitem

        setitem(self, index, value)

    def set_owner_opr(self, owner_opr):
        """Sets ``owner``.

        Examples:
            >>> v = VarNode(name="v")
            >>> v.set_owner_opr(None)
            >>> v.owner is None
            True
        """
        self.owner = owner_opr

    def __repr__(self):
        return f"VarNode:{self.name}"

    def __hash__(self):
        return id(self)

    def __bool__(self):
        # MegEngine's VarNode is False: a symbolic value has no truth, and `var in list` compares
        # with == (a new VarNode) after the identity test.
        return False


# The Tensor methods that compute with ops (operators, astype, reshape, reductions, indexing,
# a @ b): on a VarNode the ops they apply add op nodes (register_symbolic below). Those reading a
# value on the host (int(v), v.item(), np.asarray(v): a shape or a count given as a var) compute
# it with numpy().
_TENSOR_METHODS = (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
    "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
    "__rpow__", "__lshift__", "__rlshift__", "__rshift__", "__rrshift__", "__and__", "__rand__",
    "__or__", "__ror__", "__xor__", "__rxor__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__matmul__", "__rmatmul__", "__neg__", "__pos__", "__abs__", "__invert__",
    "__round__", "__getitem__", "__len__", "__iter__", "astype", "reshape", "transpose", "T",
    "flatten", "sum", "prod", "mean", "max", "min",
    "__array_priority__", "__array__", "__int__", "__float__", "__index__", "item", "tolist",
)  # fmt: skip
for _name in _TENSOR_METHODS:
    setattr(VarNode, _name, vars(array_method.ArrayMethodMixin)[_name])


def _param_names(op):
    return [k for k, v in vars(type(op)).items() if isinstance(v, property)]


def _param_value(value):
    # Enum members read as their names, as MegEngine's JSON params do; the op classes take names.
    name = getattr(value, "name", None)
    return name if isinstance(name, str) and type(value).__module__.endswith("ops") else value


class OpNode(NetworkNode):
    """An operator of a :class:`~megengine.utils.network.Network`: its ``type`` (MegEngine's
    name for it), ``name``, ``inputs`` and ``outputs`` (:class:`VarNode`) and ``params`` (a dict
    of the op's params by name, enums as their member names). Changing ``params`` or ``inputs``
    changes what the next dump writes; ``opdef`` is the op those params make.

    Examples:
        >>> import io, numpy as np
        >>> import megengine as mge
        >>> from megengine.jit import trace
        >>> from megengine.utils.network import Network
        >>> import megengine.utils.network_node as N
        >>> f = trace(lambda x: x * 2, capture_as_const=True)
        >>> _ = f(mge.Tensor(np.ones((2,), "float32")))
        >>> buf = io.BytesIO()
        >>> _ = f.dump(buf, optimize_for_inference=False)
        >>> net = Network.load(io.BytesIO(buf.getvalue()))
        >>> mul = net.get_opr_by_type(N.Elemwise)
        >>> mul.type, mul.params
        ('Elemwise', {'mode': 'MUL'})
        >>> mul.params["mode"] = "ADD"  # the file now computes x + 2
        >>> mul.opdef
        Elemwise(mode=ADD)
    """

    type = None
    opdef_class = None

    def __init__(self):
        self.inputs = []
        self.outputs = []
        self.params = {}
        self.name = None
        self._presets = None

    @classmethod
    def load(cls, opr):
        """An op node of ``cls`` for the op object ``opr`` (a ``megengine.core.ops.builtin``
        op), its params copied; ``inputs`` and ``outputs`` are filled by the caller.

        Examples:
            >>> from megengine.core.ops import builtin
            >>> node = str_to_mge_class("Elemwise").load(builtin.Elemwise(mode="relu"))
            >>> node.params
            {'mode': 'RELU'}
        """
        obj = cls()
        obj.opdef_class = type(opr)
        obj.params = {k: _param_value(getattr(opr, k)) for k in _param_names(opr)}
        if cls.type is None or cls is ReadOnlyOpNode:
            obj.type = opr.name
        return obj

    @property
    def opdef(self):
        """The op (a ``megengine.core.ops.builtin`` object) that ``params`` make.

        Examples:
            >>> from megengine.core.ops import builtin
            >>> str_to_mge_class("Elemwise").load(builtin.Elemwise(mode="exp")).opdef
            Elemwise(mode=EXP)
        """
        try:
            return self.opdef_class(**self.params)
        except TypeError as e:
            raise TypeError(f"{self!r}: bad params {self.params}: {e}") from None

    @property
    def id(self):
        """A number unique to this object.

        Examples:
            >>> node = OpNode()
            >>> node.id == id(node)
            True
        """
        return id(self)

    def add_inp_var(self, x):
        """Appends an input var.

        Examples:
            >>> node, v = OpNode(), VarNode(name="v")
            >>> node.add_inp_var(v)
            >>> node.inputs == [v]
            True
        """
        self.inputs.append(x)

    def add_out_var(self, x):
        """Appends an output var.

        Examples:
            >>> node, v = OpNode(), VarNode(name="v")
            >>> node.add_out_var(v)
            >>> node.outputs[0] is v
            True
        """
        self.outputs.append(x)

    def __repr__(self):
        return f"{self.name}{{{self.type}}}"


class Host2DeviceCopy(OpNode):
    """An input of the model: its single output is fed at run time.

    Args:
        shape: the shape; a -1 in ``declared_shape`` marks a dimension the loader may set.
        dtype: the dtype.
        name: the input's name (the dumped input is named after this node).
        device: accepted for MegEngine's signature; models here are device-neutral.

    Examples:
        >>> node = Host2DeviceCopy((1, 3), "float32", "data")
        >>> node.outputs[0].name, node.outputs[0].shape
        ('data', (1, 3))
    """

    type = "Host2DeviceCopy"

    def __init__(self, shape=None, dtype=None, name=None, device=None):
        super().__init__()
        self.shape = None if shape is None else tuple(int(d) for d in shape)
        self.dtype = None if dtype is None else _dtype_name(dtype)
        self.name = name
        self.device = device
        self.declared_shape = self.shape
        if shape is not None:
            out = VarNode(owner_opr=self, name=name)
            out._set_info((name, self.shape, self.dtype, False))
            self.outputs = [out]


class ConstOpBase(OpNode):
    """The base of the nodes holding a value (:class:`ImmutableTensor`).

    Args:
        data: the value: a number, a sequence or a numpy array (None: set later).
        name: its name.
        device: accepted for MegEngine's signature.
        graph: accepted for MegEngine's signature.

    Examples:
        >>> issubclass(ImmutableTensor, ConstOpBase)
        True
    """

    type = "ConstOpBase"

    def __init__(self, data=None, name=None, device=None, graph=None):
        if type(self) is ConstOpBase:
            raise TypeError("ConstOpBase cannot be instantiated")
        super().__init__()
        self.name = name
        self._value = None
        if data is not None:
            self.set_value(data, device)

    @property
    def shape(self):
        """The value's shape.

        Examples:
            >>> ImmutableTensor(np.zeros((2, 3)), "w").shape
            (2, 3)
        """
        return self._value.shape

    @property
    def dtype(self):
        """The value's dtype (float64 data is held as float32, int64 as int32, as MegEngine).

        Examples:
            >>> ImmutableTensor(np.zeros((2,)), "w").dtype
            dtype('float32')
        """
        return np.dtype(self._value.dtype) if self._value.dtype != "bfloat16" else "bfloat16"

    def numpy(self):
        """The value as a numpy array (a copy).

        Examples:
            >>> ImmutableTensor([1, 2], "w").numpy()
            array([1, 2], dtype=int32)
        """
        return self._value.numpy()

    def set_value(self, data, device=None):
        """Replaces the value (its shape and dtype may change; the readers are checked at the
        next dump).

        Args:
            data: a number, a sequence or a numpy array.
            device: accepted for MegEngine's signature.

        Examples:
            >>> c = ImmutableTensor(np.zeros((2,), "float32"), "w")
            >>> c.set_value([3.0])
            >>> c.numpy(), c.outputs[0].shape
            (array([3.], dtype=float32), (1,))
        """
        if not isinstance(data, (int, float, list, tuple, np.ndarray, np.number)):
            raise TypeError(
                f"{type(self).__name__}.set_value: data must be a number, a sequence or a numpy "
                f"array, got {type(data).__name__}"
            )
        self._set_value(_rt.network.Value(np.asarray(data)))

    def _set_value(self, value):
        self._value = value
        if not self.outputs:
            self.outputs = [VarNode(owner_opr=self, name=self.name)]
        self.outputs[0]._set_info((self.name, value.shape, value.dtype, False))


class ImmutableTensor(ConstOpBase):
    """A constant of the model (a parameter or any value the graph holds).

    Args:
        data: the value: a number, a sequence or a numpy array.
        name: its name.
        device: accepted for MegEngine's signature.
        graph: accepted for MegEngine's signature.

    Examples:
        >>> c = ImmutableTensor(np.arange(3, dtype="float32"), "w")
        >>> c.outputs[0].shape, c.numpy()
        ((3,), array([0., 1., 2.], dtype=float32))
    """

    type = "ImmutableTensor"


class ReadOnlyOpNode(OpNode):
    """The class of operators MegEngine has no class for; ``type`` is NeoMeg's op name. Such a
    node can be edited and dumped like any other.

    Examples:
        >>> from megengine.core.ops import builtin
        >>> str_to_mge_class("Fill") is ReadOnlyOpNode
        False
        >>> str_to_mge_class("Fill").load(builtin.Fill(value=1.0)).type
        'Fill'
    """


def _dtype_name(dtype):
    # The runtime's name of a dtype, which a loaded var reports: numpy's name, "bfloat16", or a
    # quantized dtype's full name ("QuantizedS8(0.5)"), from that name or from the quantized
    # numpy dtype (with MegEngine's mgb_dtype metadata) that VarNode.dtype and Tensor.dtype give.
    if isinstance(dtype, str) and (dtype == "bfloat16" or dtype.startswith("Quantized")):
        return dtype
    dt = np.dtype(dtype)
    if dt.metadata and "mgb_dtype" in dt.metadata:
        return _rt.network.Value(np.zeros((1,), dt)).dtype
    return dt.name


def _graph_dtype(name):
    # What the graph's input() takes for a dtype name: a quantized dtype as its numpy dtype with
    # the metadata (numpy does not know the runtime's full names).
    return _rt.InferenceModel.numpy_dtype(name) if name.startswith("Quantized") else name


# MegEngine's class name and type string per NeoMeg operator: where the names differ, and the
# operators of MegEngine's classes NeoMeg has under the same name.
_MGE_CLASSES = {
    "Elemwise": ("Elemwise", "Elemwise"),
    "Reduce": ("Reduce", "Reduce"),
    "TypeCvt": ("TypeCvt", "TypeCvt"),
    "MatrixInverse": ("MatrixInverse", "MatrixInverse"),
    "MatrixMul": ("MatrixMul", "MatrixMul"),
    "BatchedMatrixMul": ("BatchedMatrixMul", "BatchedMatmul"),
    "Dot": ("Dot", "Dot"),
    "SVD": ("SVD", "SVD"),
    "ConvolutionForward": ("ConvolutionForward", "Convolution"),
    "ConvolutionBackwardData": ("ConvolutionBackwardData", "ConvTranspose"),
    "DeformableConvForward": ("DeformableConvForward", "DeformableConv"),
    "PoolingForward": ("PoolingForward", "Pooling"),
    "AdaptivePoolingForward": ("AdaptivePoolingForward", "AdaptivePooling"),
    "ROIPooling": ("ROIPoolingForward", "ROIPooling"),
    "NMSKeep": ("NMSKeep", "NMSKeep"),
    "ConvBias": ("ConvBiasForward", "ConvBias"),
    "BatchNormForward": ("BatchNormForward", "BatchNorm"),
    "ROIAlign": ("ROIAlignForward", "ROIAlign"),
    "WarpPerspective": ("WarpPerspectiveForward", "WarpPerspective"),
    "Remap": ("RemapForward", "Remap"),
    "Resize": ("ResizeForward", "Resize"),
    "IndexingOneHot": ("IndexingOneHot", "IndexingOneHot"),
    "IndexingSetOneHot": ("IndexingSetOneHot", "IndexingSetOneHot"),
    "Argsort": ("ArgsortForward", "Argsort"),
    "Argmax": ("Argmax", "Argmax"),
    "Argmin": ("Argmin", "Argmin"),
    "CondTake": ("CondTake", "CondTake"),
    "TopK": ("TopK", "TopK"),
    "GaussianRNG": ("RNGOpr", "GaussianRNG"),
    "UniformRNG": ("RNGOpr", "UniformRNG"),
    "Linspace": ("Linspace", "Linspace"),
    "Eye": ("Eye", "Eye"),
    "GetVarShape": ("GetVarShape", "GetVarShape"),
    "Concat": ("Concat", "Concat"),
    "Broadcast": ("Broadcast", "Broadcast"),
    "BroadcastTo": ("Broadcast", "Broadcast"),
    "Dimshuffle": ("Dimshuffle", "Dimshuffle"),
    "Reshape": ("Reshape", "Reshape"),
    "ReshapeTo": ("Reshape", "Reshape"),
    "AddAxis": ("AxisAddRemove", "AxisAddRemove"),
    "RemoveAxis": ("AxisAddRemove", "AxisAddRemove"),
    "Subtensor": ("Subtensor", "Subtensor"),
    "IndexingMultiAxisVec": ("IndexingMultiAxisVec", "IndexingMultiAxisVec"),
    "IndexingSetMultiAxisVec": ("IndexingSetMultiAxisVec", "IndexingSetMultiAxisVec"),
    "IndexingIncrMultiAxisVec": ("IndexingIncrMultiAxisVec", "IndexingIncrMultiAxisVec"),
}

_by_neomeg_name = {}


def _define_classes():
    made = {}
    for neomeg_name, (cls_name, type_name) in _MGE_CLASSES.items():
        cls = made.get(cls_name)
        if cls is None:
            doc = (
                f"MegEngine's ``{cls_name}`` op node (type ``{type_name!r}``): NeoMeg's "
                f"``{neomeg_name}``."
            )
            cls = made[cls_name] = type(cls_name, (OpNode,), {"type": type_name, "__doc__": doc})
            cls.__module__ = __name__
        _by_neomeg_name[neomeg_name] = cls
    for name in builtin.__all__:
        if name not in _by_neomeg_name:
            doc = f"NeoMeg's ``{name}`` op node (MegEngine has no class for it)."
            cls = type(name, (ReadOnlyOpNode,), {"type": name, "__doc__": doc})
            cls.__module__ = __name__
            _by_neomeg_name[name] = made[name] = cls
    # Module attributes, as MegEngine's classes are (N.ConvolutionForward), but not in __all__:
    # the generated classes are documented here, not each on its own.
    globals().update(made)


_define_classes()


def str_to_mge_class(classname):
    """The op node class of an operator: by NeoMeg's op name (``"ConvolutionForward"``) or
    MegEngine's class name.

    Args:
        classname: the name.

    Returns:
        an :class:`OpNode` subclass; :class:`ReadOnlyOpNode` for an unknown name.

    Examples:
        >>> str_to_mge_class("ConvolutionForward").type
        'Convolution'
        >>> str_to_mge_class("ConvBias").__name__
        'ConvBiasForward'
    """
    cls = _by_neomeg_name.get(classname)
    if cls is None:
        cls = globals().get(classname)
        if not (isinstance(cls, type) and issubclass(cls, OpNode)):
            cls = ReadOnlyOpNode
    return cls


# ---- ops on VarNodes ----------------------------------------------------------------------


def _const(value, dtype=None):
    arr = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    if dtype is not None:
        arr = arr.astype(dtype)
    node = ImmutableTensor(arr, name=f"const_{next(_ids)}")
    return node.outputs[0]


def _promote(args):
    """MegEngine's promotion of an elementwise op's operands to one dtype, on vars and
    values: values become constants of that dtype, vars of another dtype get a TypeCvt."""
    dt = None
    values = []
    for a in args:
        if a is None:
            raise TypeError("the operand is None and is not supported.")  # MegEngine's words
        if isinstance(a, VarNode):
            name = a._dtype
        elif isinstance(a, array_method.Tensor):
            name = a._dtype_name
        else:
            values.append(a)
            continue
        dt = name if dt is None else promote_names(dt, name)
    for a in values:
        dt = promote_names(dt, operand_dtype_for(dt, a))
    out = []
    for a in args:
        if isinstance(a, VarNode):
            out.append(a if a._dtype == dt else a.astype(dt))
        else:
            out.append(_const(a, dt))
    return out


def _apply_symbolic(op, *args, elemwise=False):
    """``apply(op, *args)`` with a VarNode among the args: a new op node, whose outputs are
    returned, its shapes and dtypes the graph's inference (values among the args become
    constants). An elementwise operator (``elemwise``: ``v + 1``, ``F.exp(v)``) promotes its
    operands to one dtype first, as on Tensors; ``apply`` takes them as they are."""
    from .network import _build

    if elemwise:
        inputs = _promote(args)
    else:
        inputs = [a if isinstance(a, VarNode) else _const(a) for a in args]
    node = str_to_mge_class(op.name).load(op)
    node.name = f"{op.name}_{next(_ids)}"
    node.inputs = list(inputs)
    graph, index = _build(inputs, pending=node)
    outs = index[node]
    for k, i in enumerate(outs):
        name = node.name if len(outs) == 1 else f"{node.name}:{k}"
        out = VarNode(owner_opr=node, name=name)
        out._set_info(graph.var(i))
        node.outputs.append(out)
    for v in inputs:
        v.users.append(node)
    return tuple(node.outputs)


array_method.register_symbolic(VarNode, _apply_symbolic, _promote, _const)
