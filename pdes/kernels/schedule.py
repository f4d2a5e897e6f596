"""The schedule stage: operations with dependencies at each endpoint (``prm[PR_FINITE] = 2``).

A schedule (:mod:`models.schedule`) gives each process -- one per endpoint --
sends, receives and computes, each posted when the operations it depends on
have completed (or, for a start dependency, started).  In the kernel the
operations are numbered endpoint by endpoint (``msgs.msg_off``), and every
array indexed by an operation is written only by the part that owns its
endpoint, so the results do not depend on the partition:

* ``op_wait``  dependencies not met yet; ``op_post`` the cycle the operation is
  posted (while ``op_wait > 0``: the latest cycle a met dependency allows);
* ``op_done``  the cycle it completes (-1: not yet);
* ``op_arr``   a receive: the cycle its message's last packet arrived (-1: not yet;
  ``msg_recv`` counts its packets);
* ``op_heap``  per endpoint (its operations' range of ``msg_off``, ``ep_heap_n``
  entries used): the posted sends not started, a binary heap on (post cycle,
  operation), from which the endpoint's NIC takes its next message; a send's
  packets then leave one after the other (``msg_left``: packets not started).

Completion times are known when an operation is posted (a compute completes
``cycles`` later, a receive whose message is in at ``max(post, arrival)``), so
the stage settles a process's operations *eagerly*: an event (a send's last
flit injected, a message's last packet ejected) is pushed on a stack
(``op_work``: ``2 * op + 0`` posted, ``+ 1`` completed) and everything that
follows from it is settled at once, possibly with cycles in the future; a send
posted at a future cycle waits in the heap until then.  Every event of an
endpoint happens in its own stage calls (injection in the endpoint stage,
ejection in the output stage), in cycle order, so the order in which a part
visits its endpoints never changes a result.

Times: a send completes in the cycle its last flit is injected (the message
has left the process: MPI's local completion of an eager send, as LogGOPSim
models it), a receive in the cycle its last packet is delivered (or when it is
posted, if later), a compute ``cycles`` after it is posted.
"""
from models.core.jit import njit, njit_inline
from models.schedule import OP_COMPUTE, OP_RECV


@njit_inline
def _before(msgs, a, b):
    """Heap order: operation ``a`` before ``b`` (post cycle, then id)."""
    pa = msgs.op_post[a]
    pb = msgs.op_post[b]
    return pa < pb or (pa == pb and a < b)


@njit_inline
def heap_push(msgs, e, eg, op):
    heap = msgs.op_heap
    base = msgs.msg_off[eg]
    i = msgs.ep_heap_n[e]
    msgs.ep_heap_n[e] = i + 1
    while i > 0:
        parent = (i - 1) >> 1
        q = heap[base + parent]
        if not _before(msgs, op, q):
            break
        heap[base + i] = q
        i = parent
    heap[base + i] = op


@njit_inline
def heap_pop_ready(msgs, e, eg, t):
    """The posted send with the smallest (post cycle, id) if it is posted by cycle ``t``,
    removed from the heap; else -1."""
    heap = msgs.op_heap
    n = msgs.ep_heap_n[e]
    if n == 0:
        return -1
    base = msgs.msg_off[eg]
    top = heap[base]
    if msgs.op_post[top] > t:
        return -1
    n -= 1
    msgs.ep_heap_n[e] = n
    last = heap[base + n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _before(msgs, heap[base + c + 1], heap[base + c]):
            c += 1
        if not _before(msgs, heap[base + c], last):
            break
        heap[base + i] = heap[base + c]
        i = c
    if n > 0:
        heap[base + i] = last
    return top


@njit_inline
def _met(msgs, w, when, work, n):
    """One dependency of operation ``w`` is met in cycle ``when``; pushes its post event
    when it was the last."""
    if when > msgs.op_post[w]:
        msgs.op_post[w] = when
    msgs.op_wait[w] -= 1
    if msgs.op_wait[w] == 0:
        work[n] = 2 * w
        n += 1
    return n


@njit_inline
def settle(msgs, e, eg, work, n):
    """Settle the events on the stack ``work[0:n]`` and everything that follows from them."""
    kind, soff, succ = msgs.op_kind, msgs.op_soff, msgs.op_succ
    while n > 0:
        n -= 1
        ev = work[n]
        op = ev >> 1
        if ev & 1 == 0:
            # posted in cycle op_post[op]: start dependencies are met
            when = msgs.op_post[op]
            for j in range(soff[op], soff[op + 1]):
                if succ[j] & 1:
                    n = _met(msgs, succ[j] >> 1, when, work, n)
            k = kind[op]
            if k == OP_COMPUTE:
                msgs.op_done[op] = when + msgs.msg_pkts[op]
                work[n] = 2 * op + 1
                n += 1
            elif k == OP_RECV:
                if msgs.msg_recv[op] == msgs.msg_pkts[op]:
                    a = msgs.op_arr[op]
                    msgs.op_done[op] = a if a > when else when
                    work[n] = 2 * op + 1
                    n += 1
            else:
                heap_push(msgs, e, eg, op)
        else:
            # completed in cycle op_done[op]: completion dependencies are met
            when = msgs.op_done[op]
            for j in range(soff[op], soff[op + 1]):
                if succ[j] & 1 == 0:
                    n = _met(msgs, succ[j] >> 1, when, work, n)


@njit_inline
def complete(msgs, e, eg, op, when):
    """Operation ``op`` (of endpoint ``e``, global ``eg``) completes in cycle ``when``."""
    msgs.op_done[op] = when
    work = msgs.op_work
    work[0] = 2 * op + 1
    settle(msgs, e, eg, work, 1)


@njit_inline
def arrived(msgs, e, eg, r, td):
    """A packet of the message of receive ``r`` was delivered in cycle ``td``; True when it
    was the last one."""
    msgs.msg_recv[r] += 1
    if msgs.msg_recv[r] != msgs.msg_pkts[r]:
        return False
    msgs.op_arr[r] = td
    if msgs.op_wait[r] == 0:
        p = msgs.op_post[r]
        complete(msgs, e, eg, r, td if td > p else p)
    return True


@njit_inline
def next_send(msgs, e, eg, t):
    """The send endpoint ``e`` injects from now: its current one while it has packets not
    started, else the next posted one (by cycle ``t``), or -1."""
    m = msgs.ep_cur_msg[e]
    if m >= 0 and msgs.msg_left[m] > 0:
        return m
    return heap_pop_ready(msgs, e, eg, t)


@njit
def post_initial(msgs, ep_gid):
    """Cycle 0: post every operation without dependencies of the part's endpoints and
    settle what follows (a restored part skips this).  The order of the events does not
    matter: post cycles are maxima and the heap orders by (post cycle, id)."""
    work = msgs.op_work
    for e in range(ep_gid.shape[0]):
        eg = ep_gid[e]
        n = 0
        for op in range(msgs.msg_off[eg], msgs.msg_off[eg + 1]):
            if msgs.op_wait[op] == 0:
                work[n] = 2 * op
                n += 1
        settle(msgs, e, eg, work, n)
    return 0
