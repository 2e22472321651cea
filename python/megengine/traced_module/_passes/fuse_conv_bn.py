"""``FuseConvBn``: a Conv2d (module or ``F.conv2d`` with constant weights) whose only reader
is a BatchNorm2d (module, or ``F.batch_norm`` with constant statistics) becomes one
convolution with the BatchNorm folded into its weight and bias (``utils.bn_fusion``)."""

import logging
from collections import defaultdict

from ... import functional as F
from ... import module as M
from ...tensor import Parameter
from ...utils.bn_fusion import fold_weight_bias
from ..expr import CallFunction, is_call_function, is_call_module
from .base import BackwardPass, get_const_value, register_pass

logger = logging.getLogger(__name__)


def _is_const_node(node):
    return get_const_value(node) is not None


def _bn_input(bn):
    """The conv expr feeding BatchNorm expr ``bn``, when the pattern fits."""
    if is_call_module(bn, M.BatchNorm2d):
        if len(bn.inputs) != 2:
            return None
        src = bn.inputs[1]
    elif is_call_function(bn, F.batch_norm):
        named = bn.named_args
        for key in ("running_mean", "running_var", "weight", "bias"):
            value = named.get(key)
            if value is not None and not _is_const_node(value):
                return None
        if named.get("running_mean") is None or named.get("running_var") is None:
            return None
        if named.get("training"):
            return None
        src = named["inp"]
    else:
        return None
    conv = src.expr
    if len(src.users) != 1:
        return None
    if is_call_module(conv, M.Conv2d) and type(conv.inputs[0].owner) is M.Conv2d:
        return conv
    if is_call_function(conv, F.conv2d):
        named = conv.named_args
        bias = named.get("bias")
        if _is_const_node(named["weight"]) and (bias is None or _is_const_node(bias)):
            return conv
    return None


@register_pass("FuseConvBn")
class FuseConvBn(BackwardPass):
    r"""Fuses BatchNorm2d into the Conv2d before it (eval-mode semantics)."""

    name = "FuseConvBn"
    required_pass = ("AttrToConstant",)

    def __init__(self):
        self.used_name = defaultdict(int)

    def run_transform(self, expr):
        conv = _bn_input(expr)
        if conv is None:
            return expr
        if isinstance(conv, CallFunction):
            return self.fold_convf_bn(conv, expr)
        return self.fold_convm_bn(conv, expr)

    def get_bn_params(self, bn):
        if is_call_function(bn):
            named = bn.named_args
            values = [
                get_const_value(named[k], named[k])
                for k in ("running_mean", "running_var", "weight", "bias")
            ]
            return (*values, named["eps"])
        module = bn.inputs[0].owner
        return module.running_mean, module.running_var, module.weight, module.bias, module.eps

    def fold_convm_bn(self, conv, bn):
        mnode, inp = conv.inputs[:2]
        self_node = mnode.expr.inputs[0]
        attr = mnode.expr.name
        graph = conv.top_graph
        if len(mnode.users) > 1:
            self.used_name[mnode.qualname] += 1
            attr = f"{attr}_{self.used_name[mnode.qualname]}"
            logger.warning(
                "%s is used %d times: the fused one is %s.%s",
                mnode.qualname,
                len(mnode.users),
                graph.qualname,
                attr,
            )
        old = mnode.owner
        mean, var, gamma, beta, eps = self.get_bn_params(bn)
        weight, bias = fold_weight_bias(old.weight, old.bias, gamma, beta, mean, var, eps)
        new = M.Conv2d(
            old.in_channels,
            old.out_channels,
            old.kernel_size,
            old.stride,
            old.padding,
            old.dilation,
            old.groups,
            bias=True,
            conv_mode=old.conv_mode,
            compute_mode=old.compute_mode,
            padding_mode=old.padding_mode,
            name=old.name,
        )
        new.weight = Parameter(weight)
        new.bias = Parameter(bias)
        new.training = old.training
        _assign_attr(new, self_node.owner, attr)
        with graph.insert_exprs(mnode.expr):
            out = _get_subattr(self_node, attr)(inp)
        graph.replace_node({bn.outputs[0]: out})
        graph.compile()
        out.name = conv.outputs[0].name
        return out.expr

    def fold_convf_bn(self, conv, bn):
        named = conv.named_args
        weight = get_const_value(named["weight"], named["weight"])
        bias = get_const_value(named["bias"], named["bias"])
        mean, var, gamma, beta, eps = self.get_bn_params(bn)
        named["weight"], named["bias"] = fold_weight_bias(weight, bias, gamma, beta, mean, var, eps)
        graph = conv.top_graph
        with graph.insert_exprs():
            out = F.conv2d(**named)
        graph.replace_node({bn.outputs[0]: out})
        graph.compile()
        out.name = conv.outputs[0].name
        return out.expr


def _assign_attr(obj, module, target):
    *prefix, name = target.split(".")
    for item in prefix:
        module = getattr(module, item)
    setattr(module, name, obj)


def _get_subattr(node, target):
    for item in target.split("."):
        node = getattr(node, item)
    return node
