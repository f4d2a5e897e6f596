"""The kernel state, declared once: one row per array of the stage groups.

A row gives everything the engine needs to know about an array:

* **group**: the named tuple the stages receive it in (:data:`GROUPS`, in the order
  ``advance`` takes them after ``prm``; ``None``: passed on its own).  A group's fields are
  its rows in order: the stages unpack some groups positionally
  (``cr_t, cr_head, cr_cnt, cred, cr_res = crd``), so rows are only ever appended;
* **name**: the key in :attr:`pdes.state.PartState.arrays`;
* **length**: an expression in the named sizes of :data:`SIZES` (a tuple for a 2-D array);
  for an array bound to the part after it is built (``BOUND``) it only documents the size;
* **dtype**: the narrowest type the array's range allows (the range in a comment where it
  is narrower than int32), so that more of the state the cycle loop touches at random
  stays in the core's caches; counters that can grow large are int64.  The engine's limits
  follow from these types (:func:`limit`: :data:`pdes.sizing.MAX_VCS` and the like).
  ``None``: a bound table whose type varies (the next-hop table's uint8 or uint16 entries,
  :func:`pdes.kernels.nexthop.table_kind`);
* **fill**: the value of a new array; ``BUILT``: computed by :class:`pdes.state.PartState`
  (from the topology, the partition and the router parameters); ``BOUND``: global tables
  and per-run tables bound after the part is built (``bind_globals``, the next-hop table);
  ``LINE0``: zeros whose data starts on a cache line;
* **checkpoint**: what a checkpoint (:mod:`pdes.checkpoint`) does with it
  (:class:`Policy`): saved per entity, as ring contents, reduced over the ranks or once for
  the network; rebuilt on restore (with the reason); built again from the config;
* **memory**: the part of the memory estimate (:func:`pdes.sizing.memory_estimate`) that
  counts it: ``STATE`` (resident from the start), ``BUFFERS`` (resident as the buffers
  fill), ``HISTOGRAMS``; ``None``: counted with the tables it comes from (topology,
  routing, traffic, next hops) or, for the outboxes, not at all (their size follows from
  the partition's cut channels, which the estimate does not know).

Adding a kernel array is one row here: :mod:`pdes.kernels.cycle` takes the groups from
:data:`GROUPS`, :class:`pdes.state.PartState` allocates every row (``BUILT`` rows it
computes), the checkpoint's lists and the memory estimate are derived from the rows.
"""
from __future__ import annotations

import functools
from collections import namedtuple

import numpy as np

from models.core.params import NEVER
from models.core.record import HIST_OCTAVES, HIST_SUB, NF, NF_HOT, NSAMPLE, NSTAT

SIZES = {
    "nR": "routers of the part",
    "nP": "ports of the part (on each router its endpoint ports, then its network ports)",
    "nE": "endpoints of the part",
    "nS": "credit senders: the ports, then the endpoints (nP + nE)",
    "nC": "cut channels (network ports whose link leaves the part)",
    "nv": "VCs per port",
    "oq": "flits per output queue",
    "n_ib": "input VC ring slots (every port's VCs at the port's capacity)",
    "n_cr": "credit FIFO slots (every sender's VCs at the capacity of the VCs they count)",
    "n_rec": "flit records in the pool (grown by PartState.reserve_records)",
    "focap": "flit outbox slots per cut channel (the window)",
    "cocap": "credit outbox slots per cut channel (window x (speedup + 1): the switch's, and "
             "a failure's drops, pdes.kernels.cycle.discard_front)",
    "n_hist": "latency histogram bins (measure.latency_hist_max + HIST_SUB x HIST_OCTAVES)",
    "n_hops": "hop histogram bins",
    "n_scr": "allocator scratch entries (pdes.kernels.cycle.scratch_size)",
}
"""The named sizes the lengths are written in (and the constants NF, NF_HOT, NSTAT, NSAMPLE
of :mod:`models.core.record`)."""

CONSTANTS = {"NF": NF, "NF_HOT": NF_HOT, "NSTAT": NSTAT, "NSAMPLE": NSAMPLE,
             "HIST_SUB": HIST_SUB, "HIST_OCTAVES": HIST_OCTAVES}

BUILT, BOUND, LINE0 = "built", "bound", "line0"
STATE, BUFFERS, HISTOGRAMS = "state", "buffers", "histograms"

I8, I16, I32, I64 = np.int8, np.int16, np.int32, np.int64
U8, U32, U64 = np.uint8, np.uint32, np.uint64

Policy = namedtuple("Policy", ["kind", "group", "role", "reason"], defaults=(None, None, None))
Policy.__doc__ = """What a checkpoint does with an array.

``saved`` (``group``: the file group, whose index space is :data:`SPACES`'s), ``ring``
(``group``; ``role``: ``ids`` the records, ``ready`` their cycles, ``head`` the front
(rings restart at slot 0), ``count`` the length, also saved per entity), ``reduced``
(summed over the parts: ``stats/<name>``), ``network`` (one array for the whole network,
``group``: its dataset), ``rebuilt`` (not saved: ``reason``), ``config`` (built again from
the config: the part's numbering and capacities), ``global`` (a table of the whole run,
node-shared, built again from the config)."""


def saved(group):
    return Policy("saved", group)


def ring(group, role):
    return Policy("ring", group, role)


def rebuilt(reason):
    return Policy("rebuilt", reason=reason)


def network(dataset):
    return Policy("network", dataset)


REDUCED, CONFIG, GLOBAL = Policy("reduced"), Policy("config"), Policy("global")
EMPTY = rebuilt("outboxes are empty at a sample boundary")
POOL = rebuilt("rebuilt from the ring contents")

SPACES = {"input_vcs": "vc", "output_vcs": "vc", "ports": "port", "credits": "key",
          "endpoints": "ep"}
"""The checkpoint's file groups of per-entity arrays and their index spaces (global input
VCs, ports, credit keys, endpoints: :func:`pdes.checkpoint.global_index`)."""

Row = namedtuple("Row", ["group", "name", "length", "dtype", "fill", "checkpoint", "memory"])

# fmt: off
#    name           length             dtype fill    checkpoint                memory
GROUP_ROWS = {
    "Ports": ("the part's routers and ports: CSR offsets, link ends and latencies, endpoints; "
              "buffer capacities (flits per VC of each input port, credits per VC of each "
              "sender) and where the slots of each ring beyond the hot planes lie", [
        ("port_off",    "nR + 1",          I32, BUILT,  CONFIG,                   STATE),
        ("n_epp",       "nR",              I32, BUILT,  CONFIG,                   STATE),
        ("router_gid",  "nR",              I32, BUILT,  CONFIG,                   STATE),
        ("port_router", "nP",              I32, BUILT,  CONFIG,                   STATE),
        ("in_lat",      "nP",              I32, BUILT,  CONFIG,                   STATE),
        ("in_sender",   "nP",              I32, BUILT,  CONFIG,                   STATE),
        ("in_cut",      "nP",              I32, BUILT,  CONFIG,                   STATE),
        ("out_lat",     "nP",              I32, BUILT,  CONFIG,                   STATE),
        ("out_dest",    "nP",              I32, BUILT,  CONFIG,                   STATE),
        ("out_cut",     "nP",              I32, BUILT,  CONFIG,                   STATE),
        ("out_nbr",     "nP",              I32, BUILT,  CONFIG,                   STATE),
        ("out_ep",      "nP",              I32, BUILT,  CONFIG,                   STATE),
        ("out_ltype",   "nP",              I8,  BUILT,  CONFIG,                   STATE),
        ("ep_gid",      "nE",              I32, BUILT,  CONFIG,                   STATE),
        ("ep_port",     "nE",              I32, BUILT,  CONFIG,                   STATE),
        ("ep_active",   "nE",              I8,  BUILT,  CONFIG,                   STATE),
        ("ep_first",    "R + 1",           I64, BOUND,  GLOBAL,                   None),
        ("ep_router",   "E",               I32, BOUND,  GLOBAL,                   None),
        ("in_cap",      "nP",              I32, BUILT,  CONFIG,                   STATE),
        ("cr_cap",      "nS",              I32, BUILT,  CONFIG,                   STATE),
        ("iv_deep",     "nP * nv",         I64, BUILT,  CONFIG,                   STATE),
        ("cr_deep",     "nS * nv",         I64, BUILT,  CONFIG,                   STATE),
        # faults.at_cycle (pdes.failure): 1 on the ports of failed links and routers from
        # the failure on (set again from the config on a restart)
        ("port_down",   "nP",              I8,  0,      CONFIG,                   STATE),
    ]),
    "Tables": ("global tables: traffic destinations, distances, the part's minimal next-hop "
               "table (masks or ports, pdes.kernels.nexthop), the router graph (CSR: g_off, "
               "g_nbr, g_chan) and its channel occupancy snapshot", [
        ("dest_table",  "E",               I32, BOUND,  GLOBAL,                   None),
        ("dest_table2", "E",               I32, BOUND,  GLOBAL,                   None),
        ("dest_set_a",  "set A",           I32, BOUND,  GLOBAL,                   None),
        ("dest_set_b",  "set B",           I32, BOUND,  GLOBAL,                   None),
        ("dist",        "(R, R)",          U8,  BOUND,  GLOBAL,                   None),
        ("nh_min",      "(nR, R)",         U32, BOUND,  GLOBAL,                   None),
        ("nh_port",     "(nR, R)",         None, BOUND,  GLOBAL,                   None),
        ("nh_blk",      "(nR, R / 64, 2)", U64, BOUND,  GLOBAL,                   None),
        ("nh_off",      "multi + 1",       U32, BOUND,  GLOBAL,                   None),
        ("nh_cand",     "candidates",      None, BOUND,  GLOBAL,                   None),
        ("g_off",       "R + 1",           I32, BOUND,  GLOBAL,                   None),
        ("g_nbr",       "2 links",         I32, BOUND,  GLOBAL,                   None),
        ("g_chan",      "2 links",         I32, BOUND,  GLOBAL,                   None),
        ("snap",        "2 links or 1",    I32, BOUND,  network("routing/snap"),  None),
    ]),
    "Messages": ("finite workloads: message tables and per-endpoint progress", [
        ("msg_off",     "E + 1",           I64, BOUND,  GLOBAL,                   None),
        ("msg_dst",     "messages",        I32, BOUND,  GLOBAL,                   None),
        ("msg_pkts",    "messages",        I32, BOUND,  GLOBAL,                   None),
        ("msg_left",    "messages",        I32, BOUND,  network("messages/msg_left"), None),
        ("msg_recv",    "messages",        I32, BOUND,  network("messages/msg_recv"), None),
        ("ep_msg_ptr",  "nE",              I64, BOUND,  saved("endpoints"),       STATE),
        ("ep_cur_msg",  "nE",              I32, 0,      saved("endpoints"),       STATE),
        # schedules (pdes.kernels.schedule): the msg_* rows above are per operation (in
        # endpoint order: msg_off), with msg_dst the destination (send) or own endpoint,
        # msg_pkts the packets (send, recv) or cycles (compute); these rows are the rest
        ("op_kind",     "messages",        I8,  BOUND,  GLOBAL,                   None),
        ("op_match",    "messages",        I32, BOUND,  GLOBAL,                   None),
        ("op_soff",     "messages + 1",    I64, BOUND,  GLOBAL,                   None),
        ("op_succ",     "dependencies",    I32, BOUND,  GLOBAL,                   None),
        ("op_wait",     "messages",        I32, BOUND,  network("schedule/op_wait"), None),
        ("op_post",     "messages",        I32, BOUND,  network("schedule/op_post"), None),
        ("op_done",     "messages",        I32, BOUND,  network("schedule/op_done"), None),
        ("op_arr",      "messages",        I32, BOUND,  network("schedule/op_arr"), None),
        ("op_heap",     "messages",        I32, BOUND,  network("schedule/op_heap"), None),
        ("op_work",     "2 x most operations of a process", I32, BOUND,
         rebuilt("the schedule stage's scratch, empty between calls"),             None),
        ("ep_heap_n",   "nE",              I32, 0,      saved("endpoints"),       STATE),
    ]),
    # cr_res (shared buffers): the flits of the packet that holds the output VC not yet sent,
    # reserved at VC allocation and taken from the credits by switch allocation
    "Credits": ("per (sender port, VC): credit count, FIFO of credits on their way back and "
                "(shared buffers) the flits reserved for the packet holding the VC", [
        ("cr_t",        "n_cr",            I32, 0,      ring("credits", "ready"), BUFFERS),
        ("cr_head",     "nS * nv",         I16, 0,      ring("credits", "head"),  STATE),  # < flits per VC
        ("cr_cnt",      "nS * nv",         I16, 0,      ring("credits", "count"), STATE),  # <= flits per VC
        ("cred",        "nS * nv",         I16, BUILT,  saved("credits"),         STATE),  # <= flits per VC
        ("cr_res",      "nS * nv",         I16, 0,      saved("credits"),         STATE),  # <= flits per VC
    ]),
    # flit records live in one pool and stay put while the flit crosses a router: buffers
    # and queues hold record indices, so a hop moves one int32, not a record.
    # rec_free[0:rec_top[0]] are the freed records, records from rec_next[0] on were never
    # used; reserve_records grows the pool (up to every buffer and queue slot full) before
    # it can run out.  Fields 0..NF_HOT-1 (read at every hop) and the others are in two
    # arrays of 32-byte rows, so the records of the flits in the network take half the cache
    "Pool": ("flit records (hot and cold halves), the stack of freed records and the first "
             "record never used", [
        ("rec",         "(n_rec, NF_HOT)", I32, LINE0,  POOL,                     BUFFERS),
        ("rec_c",       "(n_rec, NF_HOT)", I32, LINE0,  POOL,                     BUFFERS),
        ("rec_free",    "n_rec",           I32, 0,      POOL,                     BUFFERS),
        ("rec_top",     "1",               I64, 0,      POOL,                     STATE),
        ("rec_next",    "1",               I64, 0,      POOL,                     STATE),
    ]),
    # the rings are allocated for every slot, but only the pages a flit or credit has used
    # become resident (their zeros are mapped lazily).  ib_rdy: the ready cycle of each
    # buffered flit, beside the records: a dense array the pops read without touching the
    # (much larger) record of the next flit.  iv_sa_at / iv_va_at: the cycle from which a VC
    # may request the switch (allocated, front flit ready) or VC allocation (head not yet
    # allocated), NEVER when it has nothing to do: one load and compare per VC in the sweeps
    "InputVCs": ("input VC rings (slot-major) and each VC's allocation state", [
        ("ib_id",       "n_ib",            I32, 0,      ring("input_vcs", "ids"), BUFFERS),
        ("ib_rdy",      "n_ib",            I32, 0,      ring("input_vcs", "ready"), BUFFERS),
        ("ib_head",     "nP * nv",         I16, 0,      ring("input_vcs", "head"), STATE),  # < flits per VC
        ("ib_cnt",      "nP * nv",         I16, 0,      ring("input_vcs", "count"), STATE),  # <= flits/VC
        ("iv_ready",    "nP * nv",         I32, 0,      saved("input_vcs"),       STATE),
        ("iv_out",      "nP * nv",         I32, -1,     saved("input_vcs"),       STATE),
        ("iv_ovc",      "nP * nv",         I8,  0,      saved("input_vcs"),       STATE),  # a VC index
        ("iv_alloc",    "nP * nv",         I8,  0,      saved("input_vcs"),       STATE),
        ("iv_sa_ready", "nP * nv",         I32, 0,      saved("input_vcs"),       STATE),
        ("iv_sa_at",    "nP * nv",         I32, NEVER,  saved("input_vcs"),       STATE),
        ("iv_va_at",    "nP * nv",         I32, NEVER,  saved("input_vcs"),       STATE),
        # the packet whose head was routed here last (source endpoint, sequence): the packet
        # that holds the VC's route and output VC, found by a failure (pdes.failure) even
        # when none of its flits is in the buffer
        ("iv_psrc",     "nP * nv",         I32, 0,      saved("input_vcs"),       STATE),
        ("iv_pseq",     "nP * nv",         I32, 0,      saved("input_vcs"),       STATE),
        # bit P & 63 of word P >> 6 set: input port P holds a flit in one of its VCs (ib_cnt),
        # so that the allocators visit only the ports with work (pdes.kernels.buffers:
        # port_gained, port_emptied; built from ib_cnt when prm[PR_OCC] is 0)
        ("ip_occ",      "nP // 64 + 1",    I64, 0,
         rebuilt("built from ib_cnt at the first kernel call"),                   STATE),
    ]),
    "Outputs": ("output VC owners, output queues, round-robin pointers", [
        ("ov_owner",    "nP * nv",         I32, -1,     saved("output_vcs"),      STATE),
        ("oq_id",       "nP * oq",         I32, 0,      ring("ports", "ids"),     BUFFERS),
        ("oq_rdy",      "nP * oq",         I32, 0,      ring("ports", "ready"),   BUFFERS),
        ("oq_head",     "nP",              I32, 0,      ring("ports", "head"),    STATE),
        ("oq_cnt",      "nP",              I32, 0,      ring("ports", "count"),   STATE),
        ("oq_ready",    "nP",              I32, NEVER,  saved("ports"),           STATE),  # front's, or NEVER
        ("rr_in",       "nP",              I8,  0,      saved("ports"),           STATE),  # a VC index
        ("rr_out",      "nP",              I16, 0,      saved("ports"),           STATE),  # local input port (vct) or switch input (booksim)
        ("rr_va",       "nP * nv",         I16, 0,      saved("output_vcs"),      STATE),  # < input VCs of a router
        # router.allocation = "booksim" (pdes.kernels.iq): the VC allocator's input arbiter
        # per input VC, the switch allocator's per switch input (pointers), and the first
        # cycle each input port's credit queue may send a credit.  A router's switch inputs
        # (router.input_speedup = s per input port: input l*s + v mod s takes VC v of its
        # l-th port) are the first slots of its block of input-VC entries: router k's
        # switch input x at plo*nv + x (plo = its first port)
        ("rr_va_in",    "nP * nv",         I16, 0,      saved("input_vcs"),       STATE),  # < output VCs of a router
        ("rr_sw_in",    "nP * nv",         I16, 0,      saved("input_vcs"),       STATE),  # < ports of a router
        ("cr_next",     "nP",              I32, 0,      saved("ports"),           STATE),
        # hold_switch_for_packet: a switch input's held VC and output (router-local), and
        # the switch input (router-local) holding an output; -1 = none
        ("hold_vc",     "nP * nv",         I8,  -1,     saved("input_vcs"),       STATE),  # a VC index
        ("hold_out",    "nP * nv",         I16, -1,     saved("input_vcs"),       STATE),  # < ports of a router
        ("held_by",     "nP",              I16, -1,     saved("ports"),           STATE),  # < input VCs of a router
        # after a failure (pdes.kernels.cycle.discard_front): the first cycle an input port
        # may drop a flit of a packet that found no route
        ("dr_next",     "nP",              I32, 0,      saved("ports"),           STATE),
        # router.allocation = "booksim": the VC of a switch input first in round-robin order
        # (BookSim's _sw_rr_offset), in the switch-input slots above
        ("sw_rr",       "nP * nv",         I8,  0,      saved("input_vcs"),       STATE),  # a VC index
        # ... and the step of the last credit an input port's credit queue took: the flits
        # of one port that cross in the same step (router.input_speedup) send one credit
        ("cr_step",     "nP",              I32, -1,     saved("ports"),           STATE),
        # the output queues' third slot array: 2 x the VC the flit travels on + 1 for a
        # head, written by the switch move and read by the output stage instead of the
        # record (the record's F_VC is written only when it leaves the part or is captured)
        ("oq_vc",       "nP * oq",         U8,  0,
         rebuilt("from the records of the queued flits (their VC and flit index)"), BUFFERS),  # <= 2 x 127 + 1
    ]),
    "Sources": ("endpoint source queues, the packet being injected and the on/off state", [
        ("ep_pending",  "nE",              I64, 0,      saved("endpoints"),       STATE),
        ("ep_next_gen", "nE",              I32, 0,      saved("endpoints"),       STATE),
        ("ep_cur_left", "nE",              I32, 0,      saved("endpoints"),       STATE),
        ("ep_cur_vc",   "nE",              I32, 0,      saved("endpoints"),       STATE),
        ("ep_cur_rec",  "(nE, NF)",        I32, 0,      saved("endpoints"),       STATE),
        ("ep_seq",      "nE",              I64, 0,      saved("endpoints"),       STATE),
        # on/off injection (pdes.kernels.injection): the state in the last cycle drawn, and
        # in the cycle before ep_next_gen; -1 = before cycle 0 (not drawn yet)
        ("ep_onoff",    "nE",              I8,  -1,     saved("endpoints"),       STATE),
        ("ep_onoff_gen", "nE",             I8,  -1,     saved("endpoints"),       STATE),
        # router.allocation = "booksim": the VC of the endpoint's last packet (-1: none yet)
        ("ep_last_vc",  "nE",              I8,  -1,     saved("endpoints"),       STATE),
        # the key of each endpoint's injection draws (models.core.rng.entity_key of the seed,
        # the endpoint and P_INJECT; uint64 bits): one hash round per endpoint and cycle
        # instead of three (pdes.kernels.injection.build_keys, prm[PR_KEYED])
        ("ep_key",      "nE",              I64, 0,
         rebuilt("computed from the seed at the first kernel call"),              STATE),
        # the outcome of each endpoint's injection draw in the current cycle (0/1): the
        # endpoint stage draws for every endpoint in one loop without branches, then
        # visits only the endpoints with work (pdes.kernels.cycle.endpoint_stage)
        ("ep_gen",      "nE",              I8,  0,
         rebuilt("drawn again in every cycle"),                                   STATE),
    ]),
    "Outbox": ("flits and credits leaving the part over cut channels", [
        ("fo_rec",      "(nC * focap, NF)", I32, 0,     EMPTY,                    None),
        ("fo_t",        "nC * focap",      I32, 0,      EMPTY,                    None),
        ("fo_cnt",      "nC",              I32, 0,      EMPTY,                    None),
        ("co_t",        "nC * cocap",      I32, 0,      EMPTY,                    None),
        ("co_vc",       "nC * cocap",      I32, 0,      EMPTY,                    None),
        ("co_cnt",      "nC",              I32, 0,      EMPTY,                    None),
    ]),
    "Stats": ("integer statistics, sample counters, histograms, per-link/endpoint counts", [
        ("st",          "NSTAT",           I64, 0,      REDUCED,                  STATE),
        ("smp",         "NSAMPLE",         I64, 0,
         rebuilt("sample counters are zero after the boundary's reduction"),      STATE),
        ("hist_plat",   "n_hist",          I64, 0,      REDUCED,                  HISTOGRAMS),
        ("hist_nlat",   "n_hist",          I64, 0,      REDUCED,                  HISTOGRAMS),
        ("hist_hops",   "n_hops",          I64, 0,      REDUCED,                  HISTOGRAMS),
        ("hist_msg",    "n_hist",          I64, 0,      REDUCED,                  HISTOGRAMS),
        ("link_flits",  "nP",              I64, 0,      saved("ports"),           STATE),
        ("ep_inj",      "nE",              I64, 0,      saved("endpoints"),       STATE),
        ("ep_del",      "nE",              I64, 0,      saved("endpoints"),       STATE),
    ]),
    None: ("passed to the stages on their own", [
        ("scr",         "n_scr",           I32, 0,
         rebuilt("the allocators' scratch, reset at every call"),                 STATE),
    ]),
}
# fmt: on

ROWS = tuple(Row(g, *r) for g, (_, rows) in GROUP_ROWS.items() for r in rows)
"""Every kernel array, group by group."""

BY_NAME = {r.name: r for r in ROWS}
assert len(BY_NAME) == len(ROWS), "a kernel array is declared twice"


def _group(name):
    doc, rows = GROUP_ROWS[name]
    G = namedtuple(name, [r[0] for r in rows], module=__name__)
    G.__doc__ = doc
    return G


Ports = _group("Ports")
Tables = _group("Tables")
Messages = _group("Messages")
Credits = _group("Credits")
Pool = _group("Pool")
InputVCs = _group("InputVCs")
Outputs = _group("Outputs")
Sources = _group("Sources")
Outbox = _group("Outbox")
Stats = _group("Stats")
GROUPS = (Ports, Tables, Messages, Credits, Pool, InputVCs, Outputs, Sources, Outbox, Stats)
"""The state groups ``advance`` takes after ``prm``, in order (then the scratch)."""
assert tuple(G.__name__ for G in GROUPS) == tuple(g for g in GROUP_ROWS if g is not None)


# --------------------------------------------------------------------------- sizes
@functools.lru_cache(maxsize=None)
def _length_code(expr: str):
    """A row's length expression, compiled once (every part allocates every row)."""
    return compile(expr, "<length>", "eval")


def shape(row: Row, sizes: dict) -> tuple:
    """The shape of an array with the named ``sizes`` (a dict of :data:`SIZES`)."""
    n = eval(_length_code(row.length), {"__builtins__": {}}, {**CONSTANTS, **sizes})  # noqa: S307
    return tuple(int(x) for x in n) if isinstance(n, tuple) else (int(n),)


def trailing_shape(row: Row) -> tuple:
    """The dimensions after the first (per entity: ``ep_cur_rec`` has ``NF`` fields)."""
    if not row.length.startswith("("):
        return ()
    rest = row.length.strip("()").split(",")[1:]
    return tuple(int(eval(x, {"__builtins__": {}}, CONSTANTS)) for x in rest)  # noqa: S307


def nbytes(row: Row, sizes: dict) -> float:
    """Bytes of an array with the named ``sizes`` (estimated sizes may be fractional)."""
    n = eval(_length_code(row.length), {"__builtins__": {}}, {**CONSTANTS, **sizes})  # noqa: S307
    n = np.prod(n) if isinstance(n, tuple) else n
    return float(n) * np.dtype(row.dtype).itemsize


def line_aligned_zeros(shape, dtype=np.int32):
    """Zeros whose data starts on a 64-byte (cache line) boundary."""
    n = int(np.prod(shape))
    size = np.dtype(dtype).itemsize
    raw = np.zeros(n + 64 // size, dtype=dtype)
    off = (-raw.ctypes.data % 64) // size
    return raw[off:off + n].reshape(shape)


def allocate(row: Row, sizes: dict, value=None) -> np.ndarray:
    """A new array of a row: its fill, or ``value`` (a ``BUILT`` row's contents) in its
    dtype, checked against its length."""
    shp = shape(row, sizes)
    if row.fill == BUILT:
        arr = np.asarray(value)
        if arr.shape != shp:
            raise ValueError(f"kernel array {row.name}: built with shape {arr.shape}, "
                             f"declared {row.length} = {shp}")
        return np.ascontiguousarray(arr, dtype=row.dtype)
    if row.fill == LINE0:
        return line_aligned_zeros(shp, row.dtype)
    if row.fill == 0:
        return np.zeros(shp, dtype=row.dtype)
    return np.full(shp, row.fill, dtype=row.dtype)


def allocate_all(sizes: dict, built: dict) -> dict:
    """Every array of the table but the ``BOUND`` ones: ``built`` gives the ``BUILT`` ones'
    contents."""
    missing = {r.name for r in ROWS if r.fill == BUILT} - set(built)
    if missing:
        raise ValueError(f"kernel arrays not built: {', '.join(sorted(missing))}")
    return {r.name: allocate(r, sizes, built.get(r.name)) for r in ROWS if r.fill != BOUND}


@functools.lru_cache(maxsize=None)
def sized_by(size: str) -> tuple:
    """The rows whose length depends on a named size (e.g. the pool's ``n_rec``), found once
    per process (every growth of a part's record pool asks)."""
    return tuple(r for r in ROWS if r.fill != BOUND and size in _length_code(r.length).co_names)


def limit(*names) -> int:
    """The largest value every one of these arrays can hold (their dtypes' smallest max)."""
    return min(int(np.iinfo(BY_NAME[n].dtype).max) for n in names)


def with_policy(kind: str) -> tuple:
    """The rows whose checkpoint policy is of this kind."""
    return tuple(r for r in ROWS if r.checkpoint.kind == kind)
