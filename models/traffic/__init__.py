"""Traffic patterns, registered by name in :data:`models.core.registry.TRAFFIC`.

An entry's function takes ``(topo, seed, **params)`` and returns a
:class:`TrafficPlan` (see there for the kinds the engine kernel evaluates).
Every pattern is a pure function of its parameters and the seed; per-packet
draws in the kernel are keyed by (seed, source, creation cycle).
"""
import importlib
import pkgutil
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TrafficPlan:
    """A traffic pattern in the form the engine kernel evaluates.

    ``kind`` is one of

    * ``"uniform"``    -- uniform over all other endpoints;
    * ``"table"``      -- ``table[e]`` is the fixed destination of ``e`` (-1 = idle);
    * ``"two_choice"`` -- ``table[e]`` or ``table2[e]`` with probability 1/2 each;
    * ``"mix"``        -- with probability ``frac`` uniform over ``set_b``, else
      uniform over ``set_a`` (sorted endpoint ids; the source is skipped);
    * ``"weighted"``   -- source ``e`` draws among ``set_a[table[e]:table2[e]]`` with
      the cumulative integer weights ``set_b[table[e]:table2[e]]`` (``table[e] = -1``:
      idle; :func:`models.traffic.booksim.weighted_plan` builds one);
    * ``"schedule"``   -- an application workload: the operations of ``ops``
      (a :class:`models.schedule.Schedule`: sends, receives, computes with
      dependencies), run by the engine's schedule stage; the run ends when
      every operation has completed;
    * ``"messages"``   -- a finite workload: each endpoint sends its messages
      (``msg_off``/``msg_dst``/``msg_pkts``) at link rate, every message posted
      at cycle 0; the run ends when all have arrived.

    ``sources`` marks the endpoints that inject; by default every endpoint
    for ``uniform``, ``table >= 0`` for ``table``/``two_choice`` and
    ``set_a`` for ``mix``.
    """

    kind: str
    table: np.ndarray
    description: str
    table2: np.ndarray | None = None
    set_a: np.ndarray | None = None
    set_b: np.ndarray | None = None
    frac: float = 0.0
    sources: np.ndarray | None = None
    msg_off: np.ndarray | None = None
    """``messages`` kind: CSR offsets (E+1) of each source endpoint's messages."""
    msg_dst: np.ndarray | None = None
    """``messages`` kind: destination endpoint of each message."""
    msg_pkts: np.ndarray | None = None
    """``messages`` kind: packets of each message."""
    schedule: str = "all_at_once"
    """``messages`` kind: ``all_at_once`` (packets of all messages interleaved) or ``staggered``."""
    ops: object = None
    """``schedule`` kind: the :class:`models.schedule.Schedule` (checked)."""
    job_names: tuple = ()
    """Several jobs (:mod:`models.jobs`): their names, in order."""
    job_proc_off: np.ndarray | None = None
    """Several jobs: job ``j`` runs processes ``job_proc_off[j]:job_proc_off[j+1]``."""

    @property
    def active(self) -> np.ndarray:
        """(E,) int8: 1 where the endpoint injects packets."""
        if self.sources is not None:
            return np.asarray(self.sources).astype(np.int8)
        if self.kind == "uniform":
            return np.ones(self.table.size, dtype=np.int8)
        if self.kind == "mix":
            out = np.zeros(self.table.size, dtype=np.int8)
            out[self.set_a] = 1
            return out
        if self.kind == "messages":
            return (np.diff(self.msg_off) > 0).astype(np.int8)
        if self.kind == "schedule":
            out = np.zeros(self.table.size, dtype=np.int8)
            out[self.ops.proc_ep] = 1
            return out
        return (self.table >= 0).astype(np.int8)


def is_finite_pattern(name: str) -> bool:
    """Whether the registered pattern ``name`` is a finite workload, known from its registration
    (``finite=True``) without building it: its plan has the kind ``messages`` or ``schedule``,
    the run ends when its messages or operations are done, and ``traffic.load`` is not read.
    An unknown name raises the registry's ``traffic.pattern: unknown traffic ...`` error."""
    from models.core.registry import TRAFFIC
    return bool(TRAFFIC.get(name).extra.get("finite", False))


for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")
