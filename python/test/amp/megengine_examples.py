"""MegEngine 1.13's own amp training steps (the docstrings of ``autocast`` and ``GradScaler``),
verbatim, each built by a function of the model, GradManager, optimizer and GradScaler it uses."""

import megengine
import megengine.functional as F
from megengine.amp import autocast


def autocast_decorator(model, gm, opt, scaler):
    # megengine.amp.autocast's docstring, "used as decorator"
    @autocast()
    def train_step(image, label):
        with gm:
            logits = model(image)
            loss = F.nn.cross_entropy(logits, label)
            gm.backward(loss)
        opt.step().clear_grad()
        return loss

    return train_step


def autocast_context(model, gm, opt, scaler):
    # megengine.amp.autocast's docstring, "used as context manager"
    def train_step(image, label):
        with autocast():  # noqa: SIM117 (MegEngine's example, verbatim)
            with gm:
                logits = model(image)
                loss = F.nn.cross_entropy(logits, label)
                gm.backward(loss)
        opt.step().clear_grad()
        return loss

    return train_step


def grad_scaler_backward(model, gm, opt, scaler):
    # megengine.amp.GradScaler's docstring
    @autocast()
    def train_step(image, label):
        with gm:
            logits = model(image)
            loss = F.nn.cross_entropy(logits, label)
            scaler.backward(gm, loss)
        opt.step().clear_grad()
        return loss

    return train_step


def grad_scaler_split(model, gm, opt, scaler):
    # megengine.amp.GradScaler's docstring, scaler.backward split into three lines
    @autocast()
    def train_step(image, label):
        with gm:
            logits = model(image)
            loss = F.nn.cross_entropy(logits, label)
            gm.backward(loss, dy=megengine.tensor(scaler.scale_factor))
        scaler.unscale(gm.attached_tensors())
        scaler.update()
        opt.step().clear_grad()
        return loss

    return train_step
