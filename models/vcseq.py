"""Link-type sequence VC classes (Galaxyfly NAR/NAL/NAG, 004 Sec. 4.3), shared by the
routing plans' static dependency check and the engine's kernel.

A sequence code holds one bit per position (bit i = link type of position i: 0 local,
1 global) under a sentinel bit.  A hop of type ``t`` takes the next position of type
``t`` after the packet's last one (``aux``); its VC class is the number of earlier
positions of type ``t``.  Positions only increase along a path, so the classes are
deadlock free.  The ``count`` variant (class = earlier hops of the same type, ``aux`` =
global hops taken) is kept as the broken scheme the check rejects.
"""
from models.core.jit import njit


@njit
def seq_length(code):
    """Positions of a sequence code (the bits below its sentinel)."""
    n = 0
    while (code >> (n + 1)) != 0:
        n += 1
    return n


@njit
def seq_hop(sequence, lseq, aux, hops, ltype):
    """``(class, new aux)`` of a hop of link type ``ltype``; class -1 if the sequence has
    no position of that type left.  ``sequence`` false: the ``count`` variant."""
    if sequence:
        n = seq_length(lseq)
        p = aux + 1
        while p < n and ((lseq >> p) & 1) != ltype:
            p += 1
        if p >= n:
            return -1, aux
        c = 0
        for q in range(p):
            if ((lseq >> q) & 1) == ltype:
                c += 1
        return c, p
    ng = aux if aux > 0 else 0
    if ltype == 1:
        return ng, ng + 1
    return hops - ng, ng
