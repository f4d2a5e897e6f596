"""Counter-based random numbers: every draw is a pure function of its key.

A draw is ``hash(seed, entity, counter, purpose)`` with the splitmix64
finaliser, so it does not depend on the order in which routers are visited,
on the rank that owns the entity, or on how many draws happened before.
``entity`` is a global id (endpoint or packet source), ``counter`` a cycle or
sequence number, ``purpose`` a small constant naming what the draw is for.
"""
import numpy as np

from models.jit import njit
from models.rng import hash4

# purposes (keep distinct; add new ones at the end)
P_INJECT = 1        # Bernoulli injection decision (entity = endpoint, counter = cycle)
P_DEST = 2          # traffic destination (entity = endpoint, counter = creation cycle)
P_ROUTE = 3         # routing choice; counter = packet sequence, purpose + 64 * hop
P_MID = 4           # intermediate router or group choice of non-minimal routing, + draw
P_TRAFFIC_AUX = 5   # second draw of a traffic pattern
# the purposes above are offset per try / hop (P_ROUTE + 64 * hop, P_MID + 1024 * j + k),
# so later ones start far above those ranges
P_MID_ROUTER = 1 << 20  # router inside a drawn intermediate group, + try
P_LAYER = 1 << 21       # layer (table) of a packet chosen at its source (counter = packet sequence)

_S11 = np.uint64(11)


@njit
def draw53(seed, entity, counter, purpose):
    """Uniform integer in [0, 2**53) (compare with a precomputed threshold)."""
    return np.int64(hash4(seed, entity, counter, purpose) >> _S11)


@njit
def below(n, seed, entity, counter, purpose):
    """Uniform integer in [0, n) for 1 <= n < 2**31 (multiply-shift, exact integers)."""
    h = hash4(seed, entity, counter, purpose) >> np.uint64(32)
    return np.int64((h * np.uint64(n)) >> np.uint64(32))


def threshold53(prob: float) -> int:
    """Integer threshold t with P(draw53 < t) = prob (to 2**-53)."""
    prob = min(max(float(prob), 0.0), 1.0)
    return int(round(prob * (1 << 53)))
