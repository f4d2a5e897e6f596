"""What the window loop (:mod:`pdes.loop`), the checkpoints (:mod:`pdes.checkpoint`) and the
result reduction (:mod:`pdes.reduce`) share: the loop's own state at a sample boundary,
when to write checkpoints, and the two ways a run ends early."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

INT32_MAX = np.iinfo(np.int32).max

EXIT_STOPPED = 75
"""Exit status of a run that stopped after writing a checkpoint (sysexits' EX_TEMPFAIL:
"try again later", here with ``--restart``)."""


class SimulationError(RuntimeError):
    """The model reached a state it cannot continue from (deadlock, routing failure)."""


@dataclass
class LoopState:
    """The window loop's own state at a sample boundary (saved in a checkpoint).

    ``prev_rate`` is the accepted rate of the last sample (warm-up convergence),
    ``series`` the rows of ``/series`` so far; the wall-clock parts only feed
    ``/run``.
    """

    cycle: int = 0
    phase: str = "warmup"
    m0: int = INT32_MAX
    m1: int = INT32_MAX
    prev_rate: float | None = None
    series: list = field(default_factory=list)
    saturated: bool = False
    reason: str = ""
    phase_wall: dict = field(default_factory=lambda: {"warmup": 0.0, "measure": 0.0, "drain": 0.0})
    kernel_s: float = 0.0
    exchange_s: float = 0.0


@dataclass
class CheckpointPlan:
    """When and where the engine writes checkpoints (see docs/parallel.md).

    At a sample boundary a checkpoint is written to ``path`` when the cycle is
    a multiple of ``every`` (> 0, a multiple of the sample period), and
    written followed by :class:`CheckpointStop` when ``requested()`` returns a
    signal number on any rank or the cycle reached ``stop_at`` (> 0).
    ``on_write(cycle)`` is called after each checkpoint.
    """

    path: str
    every: int = 0
    stop_at: int = 0
    requested: object = lambda: 0
    on_write: object = None


class CheckpointStop(Exception):
    """The run stopped after writing a checkpoint (a signal, or ``stop_at``)."""

    def __init__(self, cycle: int, path: str, signum: int):
        super().__init__(f"stopped at cycle {cycle} after writing the checkpoint {path}")
        self.cycle, self.path, self.signum = cycle, path, signum
