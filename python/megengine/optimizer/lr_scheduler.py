"""Learning-rate schedulers: the ``LRScheduler`` base and ``MultiStepLR``."""

from bisect import bisect_right

from .optimizer import Optimizer


class LRScheduler:
    r"""Base class of learning-rate schedulers: sets each group's ``lr`` from ``get_lr()``
    every time ``step()`` is called (once per epoch).

    A subclass implements ``get_lr()``, which returns one learning rate per parameter group
    for ``self.current_epoch`` from ``self.base_lrs`` (each group's ``initial_lr``).

    Args:
        optimizer: the optimizer whose learning rates are scheduled.
        current_epoch: the index of the last finished epoch; -1 starts a new schedule, any
            other value resumes one (every group must then have ``initial_lr``).

    Examples:
        >>> import megengine as mge
        >>> import megengine.optimizer as optim
        >>> class Halve(optim.LRScheduler):
        ...     def get_lr(self):
        ...         return [lr * 0.5**self.current_epoch for lr in self.base_lrs]
        >>> opt = optim.SGD([mge.Parameter([1.0])], lr=1.0)
        >>> sched = Halve(opt)
        >>> sched.step(); sched.step()
        >>> opt.param_groups[0]["lr"]
        0.25
    """

    def __init__(self, optimizer, current_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"{type(self).__name__} expects an Optimizer, got {type(optimizer).__name__}"
            )
        self.optimizer = optimizer
        self.current_epoch = current_epoch
        if current_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param_groups[{i}] has no 'initial_lr' to resume the schedule from"
                    )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.step()

    def state_dict(self):
        """The scheduler's state (everything but the optimizer).

        Returns:
            a dict of the scheduler's attributes.

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> opt = optim.SGD([mge.Parameter([1.0])], lr=1.0)
            >>> optim.MultiStepLR(opt, [2]).state_dict()["current_epoch"]
            0
        """
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        """Restores a state returned by :meth:`state_dict`.

        Args:
            state_dict: the saved state.

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> opt = optim.SGD([mge.Parameter([1.0])], lr=1.0)
            >>> sched = optim.MultiStepLR(opt, [2])
            >>> sched.load_state_dict({"milestones": [2], "gamma": 0.1, "current_epoch": 5})
            >>> sched.current_epoch
            5
        """
        self.__dict__.update(state_dict)

    def get_lr(self):
        """The learning rate of each parameter group for ``current_epoch``.

        Returns:
            a list of floats, one per parameter group.

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> opt = optim.SGD([mge.Parameter([1.0])], lr=1.0)
            >>> optim.MultiStepLR(opt, [1], gamma=0.5).get_lr()
            [1.0]
        """
        raise NotImplementedError

    def step(self, epoch=None):
        """Advances to the next epoch (or to ``epoch``) and sets the groups' learning rates.

        Args:
            epoch: the epoch to move to; the next one when None.

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> opt = optim.SGD([mge.Parameter([1.0])], lr=1.0)
            >>> sched = optim.MultiStepLR(opt, [3], gamma=0.5)
            >>> sched.step(epoch=3)
            >>> opt.param_groups[0]["lr"]
            0.5
        """
        self.current_epoch = self.current_epoch + 1 if epoch is None else epoch
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr


class MultiStepLR(LRScheduler):
    r"""Multiplies each group's learning rate by ``gamma`` at every milestone epoch:
    ``lr = initial_lr * gamma ** (number of milestones <= current_epoch)``.

    Args:
        optimizer: the optimizer whose learning rates are scheduled.
        milestones: increasing epoch indices.
        gamma: the factor applied at each milestone.
        current_epoch: the index of the last finished epoch; -1 starts a new schedule.

    Examples:
        >>> import megengine as mge
        >>> import megengine.optimizer as optim
        >>> opt = optim.SGD([mge.Parameter([1.0])], lr=1.0)
        >>> sched = optim.MultiStepLR(opt, milestones=[1, 3], gamma=0.5)
        >>> lrs = []
        >>> for epoch in range(5):
        ...     lrs.append(opt.param_groups[0]["lr"])
        ...     sched.step()
        >>> lrs
        [1.0, 0.5, 0.5, 0.25, 0.25]
    """

    def __init__(self, optimizer, milestones, gamma=0.1, current_epoch=-1):
        milestones = list(milestones)
        if milestones != sorted(milestones):
            raise ValueError(f"MultiStepLR: milestones must be increasing, got {milestones}")
        self.milestones = milestones
        self.gamma = gamma
        super().__init__(optimizer, current_epoch)

    def state_dict(self):
        """The scheduler's state: milestones, gamma and current_epoch.

        Returns:
            a dict with keys ``milestones``, ``gamma`` and ``current_epoch``.

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> opt = optim.SGD([mge.Parameter([1.0])], lr=1.0)
            >>> optim.MultiStepLR(opt, [2, 4]).state_dict()
            {'milestones': [2, 4], 'gamma': 0.1, 'current_epoch': 0}
        """
        return {k: getattr(self, k) for k in ("milestones", "gamma", "current_epoch")}

    def load_state_dict(self, state_dict):
        """Restores a state returned by :meth:`state_dict`.

        Args:
            state_dict: a dict with keys ``milestones``, ``gamma`` and ``current_epoch``.

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> opt = optim.SGD([mge.Parameter([1.0])], lr=1.0)
            >>> sched = optim.MultiStepLR(opt, [2])
            >>> sched.load_state_dict({"milestones": [5], "gamma": 0.5, "current_epoch": 5})
            >>> sched.get_lr()
            [0.5]
        """
        for key in ("milestones", "gamma", "current_epoch"):
            if key not in state_dict:
                raise KeyError(f"MultiStepLR.load_state_dict: the state has no {key!r}")
        for key in ("milestones", "gamma", "current_epoch"):
            setattr(self, key, state_dict[key])

    def get_lr(self):
        """The learning rate of each parameter group for ``current_epoch``.

        Returns:
            a list of floats, one per parameter group.

        Examples:
            >>> import megengine as mge
            >>> import megengine.optimizer as optim
            >>> opt = optim.SGD([mge.Parameter([1.0])], lr=1.0)
            >>> optim.MultiStepLR(opt, [0], gamma=0.5).get_lr()
            [0.5]
        """
        n = bisect_right(self.milestones, self.current_epoch)
        return [base * self.gamma**n for base in self.base_lrs]
