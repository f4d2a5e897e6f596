"""GOAL traces: LogGOPSim's text schedules, read into and written from a :class:`Schedule`.

GOAL (Group Operation Assembly Language) is the schedule format of LogGOPSim
(T. Hoefler, T. Schneider, A. Lumsdaine, "LogGOPSim -- Simulating Large-Scale
Applications in the LogGOPS Model", Proc. HPDC 2010, LSAP workshop, pp. 597-604);
its Schedgen tool turns MPI traces and collective algorithms into GOAL.  The
grammar read here is the one of LogGOPSim's ``txt2bin`` scanner::

    num_ranks 4
    rank 0 {
    l1: send 64b to 1 tag 5         // [label:] send <bytes>b to <rank> [tag T] [cpu C] [nic N]
    l2: recv 64b from 1 tag 5       // [label:] recv <bytes>b from <rank> [tag T] [cpu C] [nic N]
    l3: calc 100                    // [label:] calc <time units> [cpu C]
    l3 requires l2                  // l3 starts when l2 has completed (DEP_DONE)
    l1 irequires l3                 // l1 starts when l3 has started (DEP_START)
    }
    rank 1 {
    ...

``num_ranks`` comes first, then one block per rank ``0..num_ranks-1`` (in any
order).  One statement per line; blank lines, ``//`` comments (to the end of the line) and
``/* ... */`` comments (which may span lines) are skipped.  Labels are identifiers
(``[A-Za-z][A-Za-z0-9_]*``) local to their rank's block; a dependency names two
labels defined earlier in the same block.  The ``tag`` defaults to 0; ``cpu`` and
``nic`` (LogGOPSim's core and network-interface indices) are accepted and ignored.
Sizes are bytes, written with the ``b`` suffix (the only unit of the grammar).

The operations of a rank keep their order in the file: that order is MPI's
matching order (:func:`models.schedule.match_messages`).  Refused, with the file,
line and rank named: a line outside this grammar, a receive from any source or
with any tag (``-1``, which LogGOPSim allows), a peer outside the ranks,
a message to or from the rank itself, a duplicate label, a dependency on a label
not defined before it in the block, a rank block listed twice, not closed or
missing, a missing ``num_ranks``.  Dependency cycles and messages without a
partner are found afterwards by :func:`models.schedule.check`, which names the
process (the rank) and the operation (its index in the rank's block, from 0).

The reader streams the file line by line into typed arrays (``array.array``): a
few tens of bytes per operation and dependency, plus one rank's label table,
dropped at the end of its block.
"""
from __future__ import annotations

import math
import os
import re
from array import array
from dataclasses import replace
from fractions import Fraction

import numpy as np

from models.core.errors import ParameterError
from models.core.registry import REQUIRED, TRAFFIC, Param
from models.placement import PLACEMENTS, place, placement_files
from models.schedule import (DEP_DONE, DEP_START, MAX_CYCLES, OP_COMPUTE, OP_RECV, OP_SEND,
                             Schedule, check, make_schedule)
from models.traffic import TrafficPlan

TAG_MAX = 2**31 - 1
"""Largest tag a schedule keeps (int32); GOAL's own tags are unsigned 32-bit."""
NUMBER_MAX = 2**63 - 1
"""Largest size or time a schedule keeps (int64)."""

_WS = rb"[ \t]"
_NUM = rb"(-?[0-9]+)"
_LABEL = rb"([A-Za-z][A-Za-z0-9_]*)"
_OP = re.compile(
    rb"(?:" + _LABEL + _WS + rb"*:" + _WS + rb"*)?(?:"
    rb"(send|recv)" + _WS + rb"+" + _NUM + _WS + rb"*b" + _WS + rb"+(to|from)" + _WS + rb"+" + _NUM +
    rb"(?:" + _WS + rb"+tag" + _WS + rb"+" + _NUM + rb")?"
    rb"(?:" + _WS + rb"+cpu" + _WS + rb"+[0-9]+)?(?:" + _WS + rb"+nic" + _WS + rb"+[0-9]+)?"
    rb"|calc" + _WS + rb"+" + _NUM + rb"(?:" + _WS + rb"+cpu" + _WS + rb"+[0-9]+)?)")
_DEP = re.compile(_LABEL + _WS + rb"+(requires|irequires)" + _WS + rb"+" + _LABEL)
_LINE = re.compile(_OP.pattern + rb"|" + _DEP.pattern)
"""An operation (groups 1-7) or a dependency (groups 8-10)."""
_RANK = re.compile(rb"rank" + _WS + rb"+" + _NUM + _WS + rb"*\{")
_NUM_RANKS = re.compile(rb"num_ranks" + _WS + rb"+" + _NUM)


def _text(b: bytes) -> str:
    return b.decode("ascii", "replace")


def _uncomment(line: bytes, in_block: bool) -> tuple[bytes, bool]:
    """``line`` without its comments, and whether a ``/*`` comment is still open at its end."""
    out = []
    i = 0
    while True:
        if in_block:
            j = line.find(b"*/", i)
            if j < 0:
                return b" ".join(out), True
            i, in_block = j + 2, False
            continue
        a, b = line.find(b"//", i), line.find(b"/*", i)
        if b < 0 or 0 <= a < b:
            out.append(line[i:] if a < 0 else line[i:a])
            return b" ".join(out), False
        out.append(line[i:b])
        i, in_block = b + 2, True


class _Reader:
    """State of one pass over a GOAL file (see :func:`read_goal`)."""

    def __init__(self, path: str, key: str, max_ranks: int | None):
        self.path, self.key, self.max_ranks = path, key, max_ranks
        self.kind, self.peer, self.size, self.tag = array("b"), array("i"), array("q"), array("i")
        self.dep_op, self.dep_on, self.dep_kind = array("q"), array("q"), array("b")
        self.n_ranks = None
        self.blocks = {}          # rank -> (first op, number of ops), in file order
        self.rank = None          # the rank whose block is open
        self.first = 0            # its first operation
        self.labels = {}
        self.lineno = 0
        self.open_line = 0

    def fail(self, rule: str, line: int | None = None):
        where = f"{self.path}:{self.lineno if line is None else line}"
        rank = "" if self.rank is None else f"rank {self.rank}: "
        raise ParameterError(f"{self.key}: {where}: {rank}{rule}")

    def number(self, text: bytes, what: str, hi: int = NUMBER_MAX) -> int:
        v = int(text)
        if v < 0 or v > hi:
            self.fail(f"{what} {v} is outside 0..{hi}")
        return v

    def op(self, m):
        if self.rank is None:
            self.fail("an operation outside a rank block")
        label, verb, size, direction, peer, tag, calc = m.groups()[:7]
        if verb is None:
            kind, p, n, t = OP_COMPUTE, -1, self.number(calc, "calc time"), 0
        else:
            kind = OP_SEND if verb == b"send" else OP_RECV
            if direction != (b"to" if kind == OP_SEND else b"from"):
                self.fail(f"'{_text(verb)}' takes '{'to' if kind == OP_SEND else 'from'}', "
                          f"not '{_text(direction)}'")
            p = int(peer)
            if p < 0:
                self.fail(f"{_text(verb)} {'to' if kind == OP_SEND else 'from'} {p}: any-source "
                          "(-1) and negative ranks are not supported (messages are matched "
                          "statically, in MPI order)")
            if p >= self.n_ranks:
                self.fail(f"peer {p} is not a rank 0..{self.n_ranks - 1}")
            if p == self.rank:
                self.fail("a rank cannot send to or receive from itself")
            if tag is not None and tag.startswith(b"-"):
                self.fail(f"tag {_text(tag)}: any-tag (-1) and negative tags are not supported")
            t = 0 if tag is None else self.number(tag, "tag", TAG_MAX)
            n = self.number(size, "size")
        if label is not None:
            if label in self.labels:
                self.fail(f"label '{_text(label)}' is defined twice in the block")
            self.labels[label] = len(self.kind)
        self.kind.append(kind)
        self.peer.append(p)
        self.size.append(n)
        self.tag.append(t)

    def dep(self, m):
        if self.rank is None:
            self.fail("a dependency outside a rank block")
        a, how, b = m.groups()[-3:]
        ids = []
        for lab in (a, b):
            i = self.labels.get(lab)
            if i is None:
                self.fail(f"{_text(how)}: unknown label '{_text(lab)}' (labels are local to the "
                          "rank block and must be defined on an earlier line)")
            ids.append(i)
        if ids[0] == ids[1]:
            self.fail(f"'{_text(a)} {_text(how)} {_text(b)}': an operation cannot depend on itself")
        self.dep_op.append(ids[0])
        self.dep_on.append(ids[1])
        self.dep_kind.append(DEP_DONE if how == b"requires" else DEP_START)

    def structure(self, s: bytes):
        m = _RANK.fullmatch(s)
        if m:
            if self.rank is not None:
                self.fail(f"'rank' inside the block of rank {self.rank} (opened at line "
                          f"{self.open_line}; a '}}' is missing)")
            if self.n_ranks is None:
                self.fail("'num_ranks N' must come before the first rank block")
            r = int(m.group(1))
            if r < 0 or r >= self.n_ranks:
                self.fail(f"rank {r} is not a rank 0..{self.n_ranks - 1}")
            if r in self.blocks:
                self.fail(f"rank {r} has a second block")
            self.rank, self.open_line = r, self.lineno
            self.first = len(self.kind)
            return
        if s == b"}":
            if self.rank is None:
                self.fail("'}' without an open rank block")
            self.blocks[self.rank] = (self.first, len(self.kind) - self.first)
            self.rank = None
            self.labels = {}
            return
        m = _NUM_RANKS.fullmatch(s)
        if m:
            if self.rank is not None or self.n_ranks is not None:
                self.fail("'num_ranks' must be given once, before the first rank block")
            n = int(m.group(1))
            if n < 1 or n > 2**31 - 1:
                self.fail(f"num_ranks must be in 1..{2**31 - 1}, got {n}")
            if self.max_ranks is not None and n > self.max_ranks:
                self.fail(f"the trace has {n} ranks, more than the {self.max_ranks} endpoints "
                          "of the network")
            self.n_ranks = n
            return
        text = _text(s)
        self.fail("cannot parse " + repr(text if len(text) <= 60 else text[:57] + "...") +
                  " (expected: num_ranks N, rank R {, }, [label:] send/recv/calc, "
                  "'label requires label', 'label irequires label')")

    def run(self, fh):
        """Parse every line.  The common lines (operations and dependencies inside a block)
        are handled inline, with the checks of :meth:`op` and :meth:`dep` folded in; anything
        unusual goes through those methods, which name the rule broken."""
        in_comment = False
        comment_line = 0
        line_match = _LINE.fullmatch
        kind, peer, size, tag = (self.kind.append, self.peer.append, self.size.append,
                                 self.tag.append)
        dop, don, dkind = self.dep_op.append, self.dep_on.append, self.dep_kind.append
        labels = self.labels
        rank, n_ranks = -1, 0
        i = len(self.kind)
        for self.lineno, raw in enumerate(fh, 1):
            if in_comment or b"/" in raw:
                if not in_comment:
                    comment_line = self.lineno
                raw, in_comment = _uncomment(raw, in_comment)
            s = raw.strip()
            if not s:
                continue
            m = line_match(s)
            if m is None or rank < 0:                   # structure, or an error
                if m is None:
                    self.structure(s)
                elif m.group(9) is None:
                    self.op(m)
                else:
                    self.dep(m)
                rank = -1 if self.rank is None else self.rank
                n_ranks = self.n_ranks or 0
                labels = self.labels
                i = len(self.kind)
                continue
            label, verb, n, direction, p, t, calc, a, how, b = m.groups()
            if how is not None:                         # a requires / irequires b
                ia, ib = labels.get(a), labels.get(b)
                if ia is None or ib is None or ia == ib:
                    self.dep(m)                         # raises, naming the rule
                    continue
                dop(ia)
                don(ib)
                dkind(DEP_DONE if how == b"requires" else DEP_START)
                continue
            if verb is None:                            # calc
                n = int(calc)
                if n < 0 or n > NUMBER_MAX or label in labels:
                    self.op(m)                          # raises, naming the rule
                    continue
                kind(OP_COMPUTE)
                peer(-1)
                size(n)
                tag(0)
            else:
                k = OP_SEND if verb == b"send" else OP_RECV
                p, n = int(p), int(n)
                t = 0 if t is None else int(t)
                if (direction != (b"to" if k == OP_SEND else b"from") or p < 0 or p >= n_ranks
                        or p == rank or t < 0 or t > TAG_MAX or n < 0 or n > NUMBER_MAX
                        or label in labels):
                    self.op(m)                          # raises, naming the rule
                    continue
                kind(k)
                peer(p)
                size(n)
                tag(t)
            if label is not None:
                labels[label] = i
            i += 1
        if in_comment:
            self.fail("a '/*' comment is not closed", comment_line)
        if self.rank is not None:
            self.fail("the block is not closed (a '}' is missing at the end of the file)",
                      self.open_line)
        if self.n_ranks is None:
            self.rank = None
            self.fail("no 'num_ranks N' line")
        if len(self.blocks) < self.n_ranks:
            have = np.sort(np.fromiter(self.blocks, dtype=np.int64, count=len(self.blocks)))
            gap = np.nonzero(have != np.arange(have.size))[0]
            missing = int(gap[0]) if gap.size else have.size
            self.fail(f"rank {missing} has no block (num_ranks is {self.n_ranks}; an idle rank "
                      "needs an empty block 'rank R {' '}')")

    def schedule(self) -> Schedule:
        P = self.n_ranks
        kind, peer, size, tag, dop, don, dkind = (
            np.frombuffer(a, dtype=a.typecode) if len(a) else np.zeros(0, a.typecode)
            for a in (self.kind, self.peer, self.size, self.tag, self.dep_op, self.dep_on,
                      self.dep_kind))
        ranks = np.fromiter(self.blocks, dtype=np.int64, count=P)
        first = np.array([f for f, _ in self.blocks.values()], dtype=np.int64)
        count = np.array([c for _, c in self.blocks.values()], dtype=np.int64)
        off = np.zeros(P + 1, dtype=np.int64)
        cnt = np.zeros(P, dtype=np.int64)
        cnt[ranks] = count
        np.cumsum(cnt, out=off[1:])
        if not np.array_equal(ranks, np.arange(P)):
            # blocks out of rank order: number the operations rank by rank
            new_id = np.arange(kind.size, dtype=np.int64) + np.repeat(off[ranks] - first, count)
            cols = []
            for col in (kind, peer, size, tag):
                out = np.empty_like(col)
                out[new_id] = col
                cols.append(out)
            kind, peer, size, tag = cols
            dop, don = new_id[dop], new_id[don]
        return make_schedule(np.arange(P, dtype=np.int64), off, kind, peer, size, tag, dop, don,
                             dkind, f"GOAL trace {os.path.basename(self.path)}: {P} ranks, "
                             f"{kind.size} operations")


def read_goal(path, key: str = "traffic.file", max_ranks: int | None = None) -> Schedule:
    """The schedule of the GOAL file ``path``: process ``r`` is rank ``r`` (``proc_ep`` is
    ``0..P-1``, to be replaced by a placement), computes are in GOAL time units.

    Errors are :class:`ParameterError` lines ``<key>: <path>:<line>: rank R: <rule>``;
    ``max_ranks`` (the network's endpoints) refuses a larger ``num_ranks`` before the
    operations are read.  The schedule is not checked (:func:`models.schedule.check`).
    """
    path = os.fspath(path)
    if not path:
        raise ParameterError(f"{key}: a GOAL trace file is needed")
    r = _Reader(path, key, max_ranks)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise ParameterError(f"{key}: cannot read '{path}' ({exc.strerror or exc})") from None
    with fh:
        try:
            r.run(fh)
        except OSError as exc:
            raise ParameterError(f"{key}: cannot read '{path}' ({exc.strerror or exc})") from None
    return r.schedule()


# --------------------------------------------------------------------------- writer
def _deps_lines(s: Schedule, ops: range, label) -> list[str]:
    out = []
    for i in ops:
        for j in range(int(s.dep_off[i]), int(s.dep_off[i + 1])):
            how = "requires" if s.dep_kind[j] == DEP_DONE else "irequires"
            out.append(f"{label(i)} {how} {label(int(s.dep[j]))}\n")
    return out


def write_goal(s: Schedule, dest) -> None:
    """Write ``s`` as GOAL text to ``dest`` (a path or a text file object) in the form
    :func:`read_goal` and LogGOPSim read: each rank's operations in order, labelled
    ``l<k>`` (``k`` = the index in the rank), then its dependencies.  Computes are
    written as ``calc <cycles>``.  Placement and chunk annotations are not part of GOAL."""
    if not hasattr(dest, "write"):
        with open(dest, "w", encoding="ascii", newline="\n") as fh:
            write_goal(s, fh)
        return
    P = s.n_procs
    dest.write(f"num_ranks {P}\n")
    kind = s.op_kind.tolist()
    peer = s.op_peer.tolist()
    size = s.op_size.tolist()
    tag = s.op_tag.tolist()
    for p in range(P):
        lo, hi = int(s.op_off[p]), int(s.op_off[p + 1])
        lines = [f"\nrank {p} {{\n"]
        for i in range(lo, hi):
            k = kind[i]
            if k == OP_SEND:
                lines.append(f"l{i - lo}: send {size[i]}b to {peer[i]} tag {tag[i]}\n")
            elif k == OP_RECV:
                lines.append(f"l{i - lo}: recv {size[i]}b from {peer[i]} tag {tag[i]}\n")
            else:
                lines.append(f"l{i - lo}: calc {size[i]}\n")
        lines += _deps_lines(s, range(lo, hi), lambda i, lo=lo: f"l{i - lo}")
        lines.append("}\n")
        dest.write("".join(lines))


# --------------------------------------------------------------------------- pattern
def calc_to_cycles(units: np.ndarray, calc_cycles: float) -> np.ndarray:
    """ceil(units x calc_cycles) for every entry, exact for ``calc_cycles`` as its shortest
    decimal (0.3 is 3/10, so 10 units are 3 cycles, not 4); capped at MAX_CYCLES + 1, which
    :func:`models.schedule.check` refuses."""
    units = np.asarray(units, dtype=np.int64)
    f = Fraction(repr(float(calc_cycles)))
    if f == 1:
        return np.minimum(units, MAX_CYCLES + 1)
    uniq, inv = np.unique(units, return_inverse=True)
    num, den = f.numerator, f.denominator
    vals = np.array([min(-((-int(u) * num) // den), MAX_CYCLES + 1) for u in uniq.tolist()],
                    dtype=np.int64)
    return vals[inv.reshape(-1)]


def goal(topo, seed, file, calc_cycles=1.0, procs=0, placement="linear", placement_file=""):
    """Replay a GOAL trace: rank r of the file is process r, placed on an endpoint by
    ``placement``; a ``calc`` of u time units computes ceil(u x ``calc_cycles``) cycles."""
    if not calc_cycles > 0 or not math.isfinite(calc_cycles):
        raise ParameterError(f"traffic.calc_cycles: must be a finite number > 0, got {calc_cycles}")
    E = topo.n_endpoints
    s = read_goal(file, "traffic.file", max_ranks=E)
    P = s.n_procs
    if procs not in (0, P):
        raise ParameterError(f"traffic.procs: the trace {file} has {P} ranks; procs must be 0 "
                             f"(one process per rank) or {P}, got {procs}")
    ep = place(topo, P, placement, seed, placement_file or None, active_only=True).astype(np.int64)
    size = s.op_size
    comp = s.op_kind == OP_COMPUTE
    if comp.any():
        size = size.copy()
        size[comp] = calc_to_cycles(size[comp], calc_cycles)
    desc = f"{s.description}, {calc_cycles:g} cycles per calc unit, placement {placement}"
    s = replace(s, proc_ep=ep, op_size=size, description=desc)
    return TrafficPlan("schedule", np.full(E, -1, np.int32), desc,
                       ops=check(s, f"traffic.file: {file}", E))


TRAFFIC.register("goal", goal, params=[
    Param("file", str, REQUIRED, "GOAL trace file (LogGOPSim's text schedule format)", files=True),
    Param("calc_cycles", float, 1.0, "cycles per GOAL calc time unit: a calc of u units computes "
          "ceil(u x calc_cycles) cycles", lo=0.0, lo_open=True),
    Param("procs", int, 0, "processes: 0 or the trace's num_ranks (one process per rank)", lo=0),
    Param("placement", str, "linear", "rank -> endpoint mapping: linear, random or file",
          choices=PLACEMENTS),
    Param("placement_file", str, "", "placement 'file': one endpoint id per line, rank order",
          files=placement_files),
], summary="replay a GOAL trace (LogGOPSim's schedule format): sends, receives and computes "
           "per rank with their dependencies",
    reference="Hoefler, Schneider, Lumsdaine, LogGOPSim, HPDC 2010 (LSAP)", finite=True)
