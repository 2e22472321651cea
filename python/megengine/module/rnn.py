"""Recurrent layers: RNNCell, LSTMCell, RNN and LSTM, computed step by step from Linear-style
products and elementwise gates (so they are differentiable through GradManager).

An LSTM layer over a float32 sequence on the CPU is one ``LSTMForward`` op per direction (the whole
recurrence, with its own backward op: dnn/ops/defs/rnn.py), unless two GradManagers record (a
gradient of a gradient, which the backward op does not carry). Other sequences run through
``_sequence`` of their cells, which spends as few ops per time step as the gates allow: each op
costs about 1.3 us of dispatch (and as much again in backward) against a few us of arithmetic for
a (batch, hidden) step, so the op count is the time. The input projection of every step is one
matmul per layer and direction, before the recurrence."""

import math
import numbers

import numpy as np

from .. import functional as F
from ..autodiff.grad_manager import _nested_recording
from ..core.ops import builtin
from ..core.tensor import amp
from ..core.tensor.array_method import _rt_elemwise, apply, cached_op, elemwise_op, reshape
from ..tensor import Parameter, Tensor
from . import init
from .module import Module

__all__ = ["LSTM", "RNN", "LSTMCell", "RNNCell"]


def _zeros(batch, hidden_size, like):
    return F.zeros((batch, hidden_size), dtype=like.dtype, device=like.device)


_SIGMOID = elemwise_op("SIGMOID")
_TANH = elemwise_op("TANH")
_RELU = elemwise_op("RELU")
_FMA4 = elemwise_op("FUSE_MUL_ADD4")


def _split(x, axis, sizes):
    return apply(cached_op(builtin.Split, axis, tuple(sizes)), x)


class _RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, **kwargs):
        super().__init__(**kwargs)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.gate_hidden_size = num_chunks * hidden_size
        g = self.gate_hidden_size
        self.weight_ih = Parameter(np.zeros((g, input_size), dtype=np.float32))
        self.weight_hh = Parameter(np.zeros((g, hidden_size), dtype=np.float32))
        if bias:
            self.bias_ih = Parameter(np.zeros((g,), dtype=np.float32))
            self.bias_hh = Parameter(np.zeros((g,), dtype=np.float32))
        else:  # zero buffers, as MegEngine's cells keep
            self.bias_ih = Tensor(np.zeros((g,), dtype=np.float32))
            self.bias_hh = Tensor(np.zeros((g,), dtype=np.float32))
        self.reset_parameters()

    def reset_parameters(self):
        """Redraws every parameter from U(-1 / sqrt(hidden_size), 1 / sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check_input(self, inp):
        if inp.ndim != 2 or inp.shape[1] != self.input_size:
            raise ValueError(
                f"{type(self).__name__}: input must be (batch, {self.input_size}), got "
                f"{tuple(inp.shape)}"
            )

    def _check_hidden(self, h, batch, what):
        if tuple(h.shape) != (batch, self.hidden_size):
            raise ValueError(
                f"{type(self).__name__}: {what} must be ({batch}, {self.hidden_size}), got "
                f"{tuple(h.shape)}"
            )

    def _gates(self, inp, h):
        return F.linear(inp, self.weight_ih, self.bias_ih) + F.linear(
            h, self.weight_hh, self.bias_hh
        )

    def _module_info_string(self):
        return f"{self.input_size}, {self.hidden_size}, bias={self.bias}"

    def _projected_steps(self, x, seq_len, batch, w_ih, bias):
        """x (seq_len * batch, input) times w_ih^T plus bias, one (batch, gates) piece a step."""
        xp = apply(cached_op(builtin.MatrixMul, False, True), x, w_ih)[0]
        if bias is not None:
            xp = xp + bias
        return _split(xp, 0, [batch] * seq_len) if seq_len > 1 else [xp]


class RNNCell(_RNNCellBase):
    """An Elman RNN cell: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``, act tanh or relu.
    Every parameter starts from U(-1 / sqrt(hidden_size), 1 / sqrt(hidden_size)).

    Args:
        input_size: features of the input x, (batch, input_size).
        hidden_size: features of the hidden state h, (batch, hidden_size).
        bias: whether to learn b_ih and b_hh (zero buffers otherwise).
        nonlinearity: ``"tanh"`` or ``"relu"``.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.RNNCell(10, 20)
        >>> m(mge.Tensor(np.ones((3, 10), dtype=np.float32))).shape
        (3, 20)
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh"):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"RNNCell: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}"
            )
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, num_chunks=1)

    def forward(self, input, hx=None):
        self._check_input(input)
        batch = input.shape[0]
        if hx is None:
            hx = F.zeros((batch, self.hidden_size), dtype=input.dtype, device=input.device)
        self._check_hidden(hx, batch, "hx")
        g = self._gates(input, hx)
        return F.tanh(g) if self.nonlinearity == "tanh" else F.relu(g)

    def _sequence(self, x, seq_len, batch, h, reverse, zero_init):
        """The cell along a sequence x (seq_len * batch, input_size) from h (zeros when
        zero_init); returns the outputs, one (batch, hidden_size) a step in time order, and the
        final h. Three ops a step: the h product, the add and the activation."""
        bias = self.bias_ih + self.bias_hh if self.bias else None
        xs = self._projected_steps(x, seq_len, batch, self.weight_ih, bias)
        mm = cached_op(builtin.MatrixMul, False, True)
        act = _TANH if self.nonlinearity == "tanh" else _RELU
        w_hh = self.weight_hh
        outs = [None] * seq_len
        for t in range(seq_len - 1, -1, -1) if reverse else range(seq_len):
            g = xs[t] if zero_init else xs[t] + apply(mm, h, w_hh)[0]
            zero_init = False
            h = outs[t] = _rt_elemwise(act, g)
        return outs, h


class LSTMCell(_RNNCellBase):
    """A long short-term memory cell, gates in MegEngine's (and PyTorch's) order i, f, g, o:
    ``i, f, o = sigmoid(...)``, ``g = tanh(...)``, ``c' = f * c + i * g``,
    ``h' = o * tanh(c')``.

    Args:
        input_size: features of the input x, (batch, input_size).
        hidden_size: features of h and c, (batch, hidden_size).
        bias: whether to learn b_ih and b_hh (zero buffers otherwise).

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.LSTMCell(10, 20)
        >>> h, c = m(mge.Tensor(np.ones((3, 10), dtype=np.float32)))
        >>> h.shape, c.shape
        ((3, 20), (3, 20))
    """

    def __init__(self, input_size, hidden_size, bias=True):
        super().__init__(input_size, hidden_size, bias, num_chunks=4)

    def forward(self, input, hx=None):
        self._check_input(input)
        batch, hs = input.shape[0], self.hidden_size
        if hx is None:
            h = F.zeros((batch, hs), dtype=input.dtype, device=input.device)
            c = F.zeros((batch, hs), dtype=input.dtype, device=input.device)
        else:
            h, c = hx
        self._check_hidden(h, batch, "h")
        self._check_hidden(c, batch, "c")
        g = self._gates(input, h)
        i = F.sigmoid(g[:, 0:hs])
        f = F.sigmoid(g[:, hs : 2 * hs])
        cand = F.tanh(g[:, 2 * hs : 3 * hs])
        o = F.sigmoid(g[:, 3 * hs : 4 * hs])
        c_new = f * c + i * cand
        return o * F.tanh(c_new), c_new

    def _ifog(self, t):
        # the gate blocks i, f, g, o reordered to i, f, o, g: one sigmoid and one tanh a step
        i, f, g, o = _split(t, 0, [self.hidden_size] * 4)
        return F.concat([i, f, o, g], axis=0)

    def _sequence(self, x, seq_len, batch, state, reverse, zero_init):
        """The cell along a sequence x (seq_len * batch, input_size) from state (h, c) (zeros
        when zero_init); returns the outputs h, one (batch, hidden_size) a step in time order,
        and the final (h, c). Nine ops a step: the h product, the add, a split into the sigmoid
        gates and the candidate, the sigmoid, the tanh, a split into i, f and o,
        ``c' = f * c + i * g`` as one FUSE_MUL_ADD4, tanh(c') and the product with o."""
        hs = self.hidden_size
        bias = self._ifog(self.bias_ih + self.bias_hh) if self.bias else None
        xs = self._projected_steps(x, seq_len, batch, self._ifog(self.weight_ih), bias)
        w_hh = self._ifog(self.weight_hh)
        mm = cached_op(builtin.MatrixMul, False, True)
        split_cand = cached_op(builtin.Split, 1, (3 * hs, hs))
        split_ifo = cached_op(builtin.Split, 1, (hs, hs, hs))
        h, c = state
        outs = [None] * seq_len
        for t in range(seq_len - 1, -1, -1) if reverse else range(seq_len):
            g = xs[t] if zero_init else xs[t] + apply(mm, h, w_hh)[0]
            ifo, cand = apply(split_cand, g)
            i, f, o = apply(split_ifo, _rt_elemwise(_SIGMOID, ifo))
            cand = _rt_elemwise(_TANH, cand)
            c = i * cand if zero_init else _rt_elemwise(_FMA4, f, c, i, cand)
            zero_init = False
            h = outs[t] = o * _rt_elemwise(_TANH, c)
        return outs, (h, c)

    def _fused(self, x, seq_len, batch, state, reverse):
        """The cell along a float32 sequence x (seq_len * batch, input_size) from state (h, c)
        as one LSTMForward op; returns the outputs as one (seq_len * batch, hidden_size) tensor
        and the final (h, c). Its biases are added into one (one op, whose gradient reaches
        both)."""
        x = reshape(x, (seq_len, batch, self.input_size))
        inputs = [x, state[0], state[1], self.weight_ih, self.weight_hh]
        if self.bias:
            inputs.append(self.bias_ih + self.bias_hh)
        op = cached_op(builtin.LSTMForward, bias=bool(self.bias), reverse=bool(reverse))
        y, h, c, _ = apply(op, *inputs)
        return reshape(y, (seq_len * batch, self.hidden_size)), (h, c)


class _RNNBase(Module):
    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0,
        bidirectional=False,
        proj_size=0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        name = type(self).__name__
        if (
            not isinstance(dropout, numbers.Number)
            or isinstance(dropout, bool)
            or not 0 <= dropout < 1
        ):
            raise ValueError(f"{name}: dropout must be a float in [0, 1), got {dropout!r}")
        if proj_size != 0:
            raise ValueError(f"{name}: proj_size is not supported, got {proj_size}")
        if num_layers < 1:
            raise ValueError(f"{name}: num_layers must be >= 1, got {num_layers}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.num_directions = 2 if bidirectional else 1
        self.proj_size = proj_size
        self.cells = [
            [self.create_cell(layer) for _ in range(self.num_directions)]
            for layer in range(num_layers)
        ]

    # MegEngine's RNN and LSTM run on one Parameter, ``_flatten_weights`` (its cells only
    # initialise it, and keep their first values), so its checkpoints hold the trained values
    # there: for each layer and direction weight_ih, weight_hh (row-major), then bias_ih and
    # bias_hh when biased, all in one buffer of shape (gate rows, -1). Ours train the cells;
    # state_dict adds the buffer for MegEngine to load, and load_state_dict reads it back.
    def _cell_tensors(self):
        names = ("weight_ih", "weight_hh") + (("bias_ih", "bias_hh") if self.bias else ())
        for layer in range(self.num_layers):
            for d in range(self.num_directions):
                for name in names:
                    yield f"cells.{layer}.{d}.{name}", getattr(self.cells[layer][d], name)

    def _state_dict(self, rst, prefix, keep_var, seen):
        super()._state_dict(rst, prefix, keep_var, seen)
        if not keep_var:  # keep_var asks for the module's own tensors, and this is none
            flat = np.concatenate([t.numpy().ravel() for _, t in self._cell_tensors()])
            rst[prefix + "_flatten_weights"] = flat.reshape(self.cells[0][0].gate_hidden_size, -1)

    def _translate_state(self, prefix, state):
        flat = state.pop(prefix + "_flatten_weights", None)
        if flat is None:
            return
        flat = (flat.numpy() if isinstance(flat, Tensor) else np.asarray(flat)).ravel()
        tensors = list(self._cell_tensors())
        total = sum(int(np.prod(t.shape)) for _, t in tensors)
        if flat.size != total:
            raise ValueError(
                f"load_state_dict: {prefix}_flatten_weights has {flat.size} values, "
                f"{type(self).__name__}({self._module_info_string()}) holds {total}"
            )
        pos = 0
        for name, t in tensors:
            n = int(np.prod(t.shape))
            state[prefix + name] = flat[pos : pos + n].reshape(t.shape)
            pos += n

    def _layer_input(self, layer):
        return self.input_size if layer == 0 else self.num_directions * self.hidden_size

    def reset_parameters(self):
        """Redraws every parameter from U(-1 / sqrt(hidden_size), 1 / sqrt(hidden_size))."""
        for row in self.cells:
            for cell in row:
                cell.reset_parameters()

    def _module_info_string(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s

    def forward(self, input, hx=None):
        name = type(self).__name__
        if input.ndim != 3 or input.shape[2] != self.input_size:
            raise ValueError(
                f"{name}: input must be (seq_len, batch, {self.input_size}) (batch first when "
                f"batch_first), got {tuple(input.shape)}"
            )
        if self.batch_first:
            input = input.transpose((1, 0, 2))
        # with hx None: zeros of the input's dtype and device (init_hidden gives float32)
        states = self._initial_states(hx, input.shape[1], input)
        output, h = self._run(input, states, hx is None)
        if self.batch_first:
            output = output.transpose((1, 0, 2))
        return output, h

    def apply_op(self, input, hx):
        """Runs the layers over a (seq_len, batch, input_size) input from the initial state
        ``hx`` (as :meth:`init_hidden` shapes it); returns (output, final state), as
        MegEngine's.

        Args:
            input: the sequence, time first.
            hx: the initial state.

        Returns:
            (output (seq_len, batch, num_directions * hidden_size), final state).
        """
        return self._run(input, self._initial_states(hx, input.shape[1], input), hx is None)

    def _run(self, input, states, zero_init=False):
        """apply_op on the initial state of each layer and direction, as a list (zeros when
        zero_init)."""
        seq_len, batch = input.shape[0], input.shape[1]
        if amp._enabled or seq_len == 0:
            # autocast is F.linear's, so the cells run it; an empty sequence keeps its states
            return self._run_cells(input, states)
        x = reshape(input, (seq_len * batch, input.shape[2]))
        skip = zero_init and seq_len > 1
        fused = self._fuses(input, states)
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(self.num_directions):
                cell, state = self.cells[layer][d], states[layer * self.num_directions + d]
                if fused:
                    out, final = cell._fused(x, seq_len, batch, state, d == 1)
                    outs.append(out)
                    finals.append(final)
                    continue
                # zero_init skips the first step's h product, unless w_hh would then get no
                # gradient (None, which an optimizer skips, where the product gives zeros)
                seq, final = cell._sequence(x, seq_len, batch, state, d == 1, skip)
                outs.append(F.concat(seq, axis=0) if seq_len > 1 else seq[0])
                finals.append(final)
            x = F.concat(outs, axis=1) if self.num_directions == 2 else outs[0]
            if self.training and self.dropout > 0 and layer != self.num_layers - 1:
                x = F.dropout(x, self.dropout, training=True)
        output = reshape(x, (seq_len, batch, self.num_directions * self.hidden_size))
        return output, self._stack_finals(finals)

    def _fuses(self, input, states):
        """Whether the layers run as one sequence op each (LSTM, float32 on the CPU)."""
        return False

    def _run_cells(self, input, states):
        seq_len, batch = input.shape[0], input.shape[1]
        layer_in = [input[t] for t in range(seq_len)]
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(self.num_directions):
                cell = self.cells[layer][d]
                state = states[layer * self.num_directions + d]
                steps = range(seq_len) if d == 0 else range(seq_len - 1, -1, -1)
                seq = [None] * seq_len
                for t in steps:
                    state = cell(layer_in[t], state)
                    seq[t] = self.get_output_from_hidden(state)
                outs.append(seq)
                finals.append(state)
            if self.num_directions == 2:
                layer_out = [F.concat([outs[0][t], outs[1][t]], axis=1) for t in range(seq_len)]
            else:
                layer_out = outs[0]
            if self.training and self.dropout > 0 and layer != self.num_layers - 1:
                layer_out = [F.dropout(x, self.dropout, training=True) for x in layer_out]
            layer_in = layer_out
        if seq_len:
            output = F.stack(layer_in, axis=0)
        else:
            width = self.num_directions * self.hidden_size
            output = F.zeros((0, batch, width), dtype=input.dtype, device=input.device)
        return output, self._stack_finals(finals)

    def init_hidden(self, batch_size):
        """The zero initial state for ``batch_size`` sequences, float32 as MegEngine's:
        (num_layers * num_directions, batch_size, hidden_size) (a pair of them for LSTM).

        Args:
            batch_size: the number of sequences.

        Returns:
            the state.
        """
        shape = (self.num_layers * self.num_directions, batch_size, self.hidden_size)
        return self._pack_zero(F.zeros(shape))

    def _check_state(self, h, batch, what):
        want = (self.num_layers * self.num_directions, batch, self.hidden_size)
        if tuple(h.shape) != want:
            raise ValueError(f"{type(self).__name__}: {what} must be {want}, got {tuple(h.shape)}")


class RNN(_RNNBase):
    """A multi-layer Elman RNN over a sequence: each layer runs an :class:`RNNCell` along
    time (both ways when bidirectional, outputs concatenated), the next layer reads its
    outputs.

    Args:
        input_size: features of each step of the input.
        hidden_size: features of the hidden state.
        num_layers: stacked layers.
        bias: whether the cells learn biases.
        batch_first: input and output are (batch, seq, feature) instead of (seq, batch,
            feature).
        dropout: dropout probability on each layer's output but the last, when training.
        bidirectional: run a second cell backwards along time.
        proj_size: must be 0 (projections are not supported).
        nonlinearity: ``"tanh"`` or ``"relu"``, keyword only (MegEngine's RNN takes it from
            its keyword arguments, so the fourth positional argument is ``bias``).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.RNN(10, 20, 2, bidirectional=True)
        >>> out, h_n = m(mge.Tensor(np.ones((6, 3, 10), dtype=np.float32)))
        >>> out.shape, h_n.shape
        ((6, 3, 40), (4, 3, 20))
    """

    def __init__(
        self,
        input_size,
        hidden_size,
        num_layers=1,
        bias=True,
        batch_first=False,
        dropout=0,
        bidirectional=False,
        proj_size=0,
        *,
        nonlinearity="tanh",
        **kwargs,
    ):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.nonlinearity = nonlinearity
        super().__init__(
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            proj_size,
            **kwargs,
        )

    def create_cell(self, layer):
        """The RNNCell of ``layer`` (one per direction is made).

        Args:
            layer: the layer's index.

        Returns:
            a new RNNCell.

        Examples:
            >>> import megengine.module as M
            >>> M.RNN(10, 20, 2, bidirectional=True).create_cell(1).input_size
            40
        """
        return RNNCell(self._layer_input(layer), self.hidden_size, self.bias, self.nonlinearity)

    def _initial_states(self, hx, batch, input):
        n = self.num_layers * self.num_directions
        if hx is None:
            return [_zeros(batch, self.hidden_size, input)] * n
        self._check_state(hx, batch, "hx")
        return [hx[i] for i in range(n)]

    def get_output_from_hidden(self, hx):
        """The output part of a state: the state itself.

        Args:
            hx: a state.

        Returns:
            hx.

        Examples:
            >>> import megengine.module as M
            >>> m = M.RNN(2, 3)
            >>> m.get_output_from_hidden(m.init_hidden(4)).shape
            (1, 4, 3)
        """
        return hx

    def _pack_zero(self, zero):
        return zero

    def _stack_finals(self, finals):
        return F.stack(finals, axis=0)


class LSTM(_RNNBase):
    """A multi-layer LSTM over a sequence: each layer runs an :class:`LSTMCell` along time
    (both ways when bidirectional), the next layer reads its outputs.

    Args:
        input_size: features of each step of the input.
        hidden_size: features of h and c.
        num_layers: stacked layers.
        bias: whether the cells learn biases.
        batch_first: input and output are (batch, seq, feature) instead of (seq, batch,
            feature).
        dropout: dropout probability on each layer's output but the last, when training.
        bidirectional: run a second cell backwards along time.
        proj_size: must be 0 (projections are not supported).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.LSTM(10, 20, 2)
        >>> out, (h_n, c_n) = m(mge.Tensor(np.ones((6, 3, 10), dtype=np.float32)))
        >>> out.shape, h_n.shape, c_n.shape
        ((6, 3, 20), (2, 3, 20), (2, 3, 20))
    """

    def create_cell(self, layer):
        """The LSTMCell of ``layer`` (one per direction is made).

        Args:
            layer: the layer's index.

        Returns:
            a new LSTMCell.

        Examples:
            >>> import megengine.module as M
            >>> M.LSTM(10, 20, 2).create_cell(1).input_size
            20
        """
        return LSTMCell(self._layer_input(layer), self.hidden_size, self.bias)

    def _initial_states(self, hx, batch, input):
        n = self.num_layers * self.num_directions
        if hx is None:
            zero = _zeros(batch, self.hidden_size, input)
            return [(zero, zero)] * n
        h, c = hx
        self._check_state(h, batch, "h_0")
        self._check_state(c, batch, "c_0")
        return [(h[i], c[i]) for i in range(n)]

    def get_output_from_hidden(self, hx):
        """The output part of an (h, c) state: h.

        Args:
            hx: an (h, c) state.

        Returns:
            h.

        Examples:
            >>> import megengine.module as M
            >>> m = M.LSTM(2, 3)
            >>> m.get_output_from_hidden(m.init_hidden(4)).shape
            (1, 4, 3)
        """
        return hx[0]

    def _fuses(self, input, states):
        # LSTMForward has no CUDA kernel (the CUDA handle would stage it through the host and
        # naive's loops), so a GPU sequence keeps the per-step ops, which have CUDA kernels.
        if not input._device_name.startswith("cpu"):
            return False
        # LSTMBackward has no rule of its own: under two recording managers (a gradient of a
        # gradient) the per-step ops run, which differentiate twice.
        if _nested_recording():
            return False
        # LSTMForward is float32 only; the cells' parameters are float32 unless replaced
        tensors = [input] + [t for state in states for t in state]
        for row in self.cells:
            for cell in row:
                tensors += [cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh]
        return all(t.dtype == np.float32 for t in tensors)

    def _pack_zero(self, zero):
        return (zero, F.zeros_like(zero))

    def _stack_finals(self, finals):
        return F.stack([s[0] for s in finals], axis=0), F.stack([s[1] for s in finals], axis=0)
