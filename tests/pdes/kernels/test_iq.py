"""router.allocation = "booksim": BookSim2's input-queued router, rule by rule.

The expected outcomes were derived by hand from BookSim2's source (commit 28f4329):
``src/allocators/separable_input_first.cpp`` and ``islip.cpp`` (which request wins, and
which round-robin pointer moves), ``src/routers/iq_router.cpp`` (in which step each
stage completes, when a tail frees its output VC and when the next head starts routing).
"""

import numpy as np
import pytest

from models.core import params as P
from pdes import config as C
from pdes.engine import run_local
from pdes.kernels.iq import (AL_INPUT_FIRST, AL_ISLIP, done, head_offset, make_iq_scratch,
                             match, route_after)


def scratch(n):
    prm = np.zeros(P.NPRM, np.int64)
    prm[P.PR_NV] = 1
    prm[P.PR_ALLOC] = 1
    return make_iq_scratch(prm, np.array([0, n], np.int64))


def run_match(reqs, alg, in_ptr, out_ptr, iters=1, n=3):
    iqs = scratch(n)
    rq_in = iqs.rq_in
    rq_out = iqs.rq_out
    for j, (i, o) in enumerate(reqs):
        rq_in[j], rq_out[j] = i, o
    nm = match(len(reqs), rq_in, rq_out, alg, iters, in_ptr, 0, n, out_ptr, 0, n, iqs)
    got = sorted((int(rq_in[j]), int(rq_out[j])) for j in iqs.m_req[:nm])
    # the scratch is left reset for the next router
    assert (iqs.in_best == -1).all() and (iqs.out_best == -1).all()
    assert (iqs.in_match == -1).all() and (iqs.out_match == -1).all()
    return got


REQS = [(0, 0), (0, 1), (1, 0), (2, 0), (2, 2)]   # (input, output)


def test_separable_input_first_inputs_pick_then_outputs():
    """Each input's arbiter takes the output first after its pointer; each output's arbiter
    the input first after its pointer; both pointers move past a match, and only then."""
    in_ptr = np.zeros(3, np.int16)
    out_ptr = np.zeros(3, np.int16)
    # inputs 0, 1, 2 all pick output 0 (first after pointer 0); output 0 takes input 0
    assert run_match(REQS, AL_INPUT_FIRST, in_ptr, out_ptr) == [(0, 0)]
    assert list(in_ptr) == [1, 0, 0] and list(out_ptr) == [1, 0, 0]
    # now input 0 picks output 1; inputs 1 and 2 pick output 0, which takes input 1
    assert run_match(REQS, AL_INPUT_FIRST, in_ptr, out_ptr) == [(0, 1), (1, 0)]
    assert list(in_ptr) == [2, 1, 0] and list(out_ptr) == [2, 1, 0]


def test_islip_outputs_grant_inputs_accept():
    """iSLIP: each output grants the requesting input first after its pointer, each input
    accepts the granting output first after its pointer."""
    in_ptr = np.zeros(3, np.int16)
    out_ptr = np.zeros(3, np.int16)
    # outputs 0 and 1 grant input 0, output 2 grants input 2; input 0 accepts output 0
    assert run_match(REQS, AL_ISLIP, in_ptr, out_ptr) == [(0, 0), (2, 2)]
    assert list(in_ptr) == [1, 0, 0] and list(out_ptr) == [1, 0, 0]
    # output 0's pointer is past input 0: it grants input 1; output 1 grants input 0,
    # which accepts it (its pointer is at output 1)
    assert run_match(REQS, AL_ISLIP, in_ptr, out_ptr) == [(0, 1), (1, 0), (2, 2)]
    assert list(in_ptr) == [2, 1, 0] and list(out_ptr) == [2, 1, 0]


def test_islip_later_iterations_match_more_but_move_no_pointer():
    reqs = [(0, 0), (0, 1), (1, 1)]
    in_ptr = np.zeros(3, np.int16)
    out_ptr = np.zeros(3, np.int16)
    # one iteration: outputs 0 and 1 both grant input 0, which accepts output 0
    assert run_match(reqs, AL_ISLIP, in_ptr.copy(), out_ptr.copy(), iters=1) == [(0, 0)]
    # a second iteration gives output 1 to input 1, without moving their pointers
    assert run_match(reqs, AL_ISLIP, in_ptr, out_ptr, iters=2) == [(0, 0), (1, 1)]
    assert list(in_ptr) == [1, 0, 0] and list(out_ptr) == [1, 0, 0]


def test_round_robin_wraps_past_the_last_index():
    in_ptr = np.array([2, 0, 0], np.int16)
    out_ptr = np.array([2, 0, 0], np.int16)
    # input 0 (pointer 2) prefers output 0 over 1 after wrapping; output 0 (pointer 2)
    # prefers input 2, then input 0
    assert run_match([(0, 0), (0, 1), (2, 0)], AL_INPUT_FIRST, in_ptr, out_ptr) == [(2, 0)]
    assert list(out_ptr) == [0, 0, 0] and list(in_ptr) == [2, 0, 1]


@pytest.mark.parametrize("tau,d,s,want", [
    (4, 1, 2, 4),     # one cycle: completes in the step it is evaluated
    (5, 1, 2, 5),
    (5, 2, 2, 6),     # two cycles, evaluated in cycle 2: the first step of cycle 3
    (4, 3, 2, 8),
    (7, 2, 1, 8),
])
def test_stage_completion_step(tau, d, s, want):
    assert done(tau, d, s) == want


def test_routing_start_to_vc_allocation():
    # lookahead routing: VC allocation in the step routing would start
    assert route_after(6, 0, 2) == 6 and head_offset(0, 2) == 0
    # one cycle: routing completes in its step, VC allocation the step after
    assert route_after(6, 1, 2) == 7 and head_offset(1, 2) == 1
    # three cycles from step 6 (cycle 3): completes in step 10 (cycle 5), VC allocation 11
    assert route_after(6, 3, 2) == 11 and head_offset(3, 2) == 5


def two_routers(tmp_path):
    """Router 0 with nodes 0 and 1, router 1 with node 2, one 1-cycle link."""
    path = tmp_path / "two.anynet"
    path.write_text("router 0 node 0 node 1 router 1 1\nrouter 1 node 2\n")
    return str(path)


def latencies(tmp_path, sets):
    cfg = C.resolve({}, ["topology.name=file", "topology.format=anynet",
                         f"topology.path={two_routers(tmp_path)}", "router.link_latency=0",
                         "traffic.pattern=alltoall", "traffic.order=shift",
                         "traffic.message_packets=1", "router.num_vcs=1",
                         "router.vc_buffer_flits=8", "router.packet_size=2", *sets])
    res = run_local(cfg)
    h = res["hist_network_latency"]
    e = res["hist_latency_edges"]
    return sorted(int(e[i]) for i in np.nonzero(h)[0] for _ in range(int(h[i])))


def test_two_flit_packets_speedup_1_hand_derived(tmp_path):
    """All-to-all of nodes 0, 1, 2 (each sends to i+1, then i+2), 2-flit packets, 1 VC,
    every delay 1, speedup 1.  Derived step by step from iq_router.cpp:

    * node 1's second packet (to node 0) wins the ejection VC of node 0 at router 0 in
      cycle 7, one cycle before node 2's first packet asks for it; node 2's packet gets it
      in cycle 10: its tail's switch grant (cycle 9) frees the VC for the cycles after;
    * node 2's second packet waits in router 0's link VC behind that packet and starts
      routing only in the cycle after its tail left (13): 17 cycles instead of 15.
    """
    got = latencies(tmp_path, ["router.allocation=booksim", "router.internal_speedup=1"])
    assert got == [8, 10, 13, 15, 15, 17]
    # pdes's own allocation lets a queued head route as soon as it arrives
    assert latencies(tmp_path, ["router.internal_speedup=1"]) == [8, 8, 13, 13, 13, 13]


def test_two_flit_packets_speedup_2_hand_derived(tmp_path):
    """The same with internal speedup 2 (two steps per cycle): a VC may send a flit in
    each step, an output sends one flit per cycle (node 2's first packet: both flits cross
    the switch in cycle 7, the body leaves in cycle 8)."""
    got = latencies(tmp_path, ["router.allocation=booksim", "router.internal_speedup=2"])
    assert got == [6, 6, 9, 9, 10, 10]


def test_wait_for_tail_credit_frees_the_output_vc_when_the_tail_credit_is_back(tmp_path):
    """The case above with wait_for_tail_credit: a packet that waits for a link's only output
    VC behind another packet gets it, without the key, in the cycle after that packet's tail
    won the switch; with it only once the tail's credit is back (the tail crosses the link
    and the next router's switch, its credit comes back over the link after credit_delay):
    the two packets that queued so (the fifth and sixth latency) arrive 7 cycles later.  hold_switch_for_packet changes nothing here:
    a 2-flit packet's body is never in the buffer yet when its head wins the switch."""
    base = ["router.allocation=booksim", "router.internal_speedup=1"]
    assert latencies(tmp_path, base) == [8, 10, 13, 15, 15, 17]
    assert latencies(tmp_path, base + ["router.wait_for_tail_credit=true"]) == \
        [8, 10, 13, 15, 22, 24]
    assert latencies(tmp_path, base + ["router.hold_switch_for_packet=true"]) == \
        [8, 10, 13, 15, 15, 17]


def test_input_speedup_lets_two_vcs_of_a_port_cross_in_one_step(tmp_path):
    """4-flit packets over 2 VCs, speedup 1: node 2's packets to nodes 0 and 1 reach router 0's
    link input on the two VCs.  With input_speedup 1 the VCs take turns at the port's one
    switch input (one flit per cycle between them); with 2 each VC has its own switch input
    and the two packets, bound for different ejection ports, cross side by side:
    the second and the last packet arrive a cycle earlier and the fifth two cycles earlier;
    input_speedup above num_vcs acts as num_vcs."""
    base = ["router.allocation=booksim", "router.internal_speedup=1", "router.packet_size=4",
            "router.num_vcs=2"]
    assert latencies(tmp_path, base) == [10, 14, 15, 15, 17, 19]
    assert latencies(tmp_path, base + ["router.input_speedup=2"]) == [10, 13, 15, 15, 15, 18]
    assert latencies(tmp_path, base + ["router.input_speedup=9"]) == [10, 13, 15, 15, 15, 18]


@pytest.mark.parametrize("alloc,isx,hold", [("islip", 1, 0), ("separable_input_first", 2, 1),
                                             ("separable_output_first", 4, 0)])
def test_booksim_allocation_exact_on_any_part_count_and_after_restart(tmp_path, alloc, isx,
                                                                      hold):
    """The arbiters' pointers, the switch inputs' state (input speedup 1, 2 and 4 over 4 VCs,
    switch holding) and the credit queues are per router: 1, 2 and 3 parts give the same
    results, also continuing from a checkpoint written on 2 parts."""
    from pdes.build import prepare
    from tests.helpers import make_cfg, restarted_on_other_part_counts
    cfg = make_cfg("router.allocation=booksim", f"router.vc_allocator={alloc}",
                   f"router.sw_allocator={alloc}", "router.alloc_iters=2",
                   f"router.input_speedup={isx}", f"router.hold_switch_for_packet={bool(hold)}".lower(),
                   "router.packet_size=3", "router.num_vcs=4", "routing.algorithm=ugal_l",
                   "traffic.load=0.7", "router.link_latency=2", preset="restart")
    with restarted_on_other_part_counts(cfg, prepare(cfg), tmp_path / "ck.h5") as f:
        for name in ("input_vcs/rr_va_in", "input_vcs/rr_sw_in", "input_vcs/sw_rr",
                     "input_vcs/hold_vc", "ports/cr_next", "endpoints/ep_last_vc"):
            assert name in f


def test_allocator_keys_need_booksim_allocation():
    with pytest.raises(C.ConfigError, match="router.vc_allocator: only with"):
        C.resolve({}, ["router.vc_allocator=separable_input_first"])
    with pytest.raises(C.ConfigError, match="router.allocation"):
        C.resolve({}, ["router.allocation=booksim", "router.pipeline=staged"])
