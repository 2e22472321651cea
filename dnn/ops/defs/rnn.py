# Recurrent layers over a whole sequence: one operator runs an LSTM layer's recurrence (one
# direction), so that a sequence costs one op instead of several per time step, and its backward
# computes the weight gradients as one product each over every step.
# The DSL (params, field, enum, op) is documented in dnn/ops/opgen/model.py.

LSTM = params(
    "LSTM",
    "One LSTM layer in one direction, gates in MegEngine's (and PyTorch's) order i, f, g, o: "
    "i, f, o = sigmoid(a), g = tanh(a) of a = x W_ih^T + h W_hh^T + bias, c' = f * c + i * g, "
    "h' = o * tanh(c').",
    field("bias", "bool", True, "whether a bias input (4 * hidden) is added to the gates"),
    field(
        "reverse",
        "bool",
        False,
        "run the steps from the last to the first (a bidirectional layer's second direction); "
        "outputs stay indexed by time",
    ),
)

op(
    "LSTMForward",
    "The LSTM recurrence over a time-first sequence. Inputs: x (T, B, I), h0 and c0 (B, H), "
    "w_ih (4H, I), w_hh (4H, H), then bias (4H) iff bias. Outputs: y (T, B, H), the h of every "
    "step; hn and cn (B, H), the state after the last step taken (time 0 when reverse); reserve "
    "(T, B, 7H), what the backward reads, per step t and row b the activated gates i, f, g, o, "
    "then h and c before the step (the state the step started from) and tanh of c after it. "
    "All float32.",
    inputs=["x", "h0", "c0", "w_ih", "w_hh", "*bias"],
    outputs=["y", "hn", "cn", "reserve"],
    param=LSTM,
    grad=Grad(saves=("inputs", "outputs"), absent_grads=True),
)

op(
    "LSTMBackward",
    "Gradients of LSTMForward from its reserve and the gradients of y, hn and cn (zeros where "
    "none). Inputs: x, w_ih, w_hh, reserve, dy, dhn, dcn. Outputs: dx, dh0, dc0, dw_ih, dw_hh, "
    "then dbias iff bias. dw_ih, dw_hh and dbias are each one sum over all T * B rows.",
    inputs=["x", "w_ih", "w_hh", "reserve", "dy", "dhn", "dcn"],
    outputs=["dx", "dh0", "dc0", "dw_ih", "dw_hh", "*dbias"],
    param=LSTM,
)
