"""Counter-based random numbers: every draw is a pure function of its key.

A draw is ``hash4(seed, entity, counter, purpose)``, splitmix64 rounds over
the key, so it does not depend on the order in which routers are visited, on
the rank that owns the entity, or on how many draws happened before.
``entity`` is a global id (endpoint or packet source), ``counter`` a cycle or
sequence number, ``purpose`` a small constant naming what the draw is for.
The engine's draws and the randomised routing-table constructions
(``models.routing.layered``) both use it.
"""
import numpy as np

from models.core.jit import njit

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_G = np.uint64(0x9E3779B97F4A7C15)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


@njit
def mix64(x):
    """splitmix64 finaliser (bijective on uint64)."""
    x = np.uint64(x)
    x = (x ^ (x >> _S30)) * _M1
    x = (x ^ (x >> _S27)) * _M2
    return x ^ (x >> _S31)


@njit
def entity_key(seed, entity, purpose):
    """The rounds of :func:`hash4` before the counter enters: a stream of draws of one
    entity for one purpose (an endpoint's injection draws, one per cycle) computes it once
    and draws with :func:`keyed_hash`."""
    x = mix64(np.uint64(seed) * _G + np.uint64(purpose))
    return mix64(x ^ (np.uint64(entity) * _M1))


@njit
def keyed_hash(key, counter):
    """``hash4(seed, entity, counter, purpose)`` from ``key = entity_key(seed, entity,
    purpose)`` (a uint64, or its bits in an int64)."""
    return mix64(np.uint64(key) ^ (np.uint64(counter) * _M2 + _G))


@njit
def hash4(seed, entity, counter, purpose):
    """64-bit hash of the four key parts (each an integer >= 0)."""
    return keyed_hash(entity_key(seed, entity, purpose), counter)

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
P_ONOFF = 1 << 22       # on/off injection: the state change of a cycle (counter = cycle)
P_ONOFF_INIT = (1 << 22) + 1  # on/off injection: the state before cycle 0 (counter = 0)
P_FAIL_LINK = 1 << 23         # failed links drawn before the run (entity = link id, models.faults)
P_FAIL_ROUTER = (1 << 23) + 1  # failed routers drawn before the run (entity = router id)

_S11 = np.uint64(11)


@njit
def draw53(seed, entity, counter, purpose):
    """Uniform integer in [0, 2**53) (compare with a precomputed threshold)."""
    return np.int64(hash4(seed, entity, counter, purpose) >> _S11)


@njit
def keyed_draw53(key, counter):
    """:func:`draw53` from ``key = entity_key(seed, entity, purpose)``."""
    return np.int64(keyed_hash(key, counter) >> _S11)


@njit
def below(n, seed, entity, counter, purpose):
    """Uniform integer in [0, n) for 1 <= n < 2**31 (multiply-shift, exact integers)."""
    h = hash4(seed, entity, counter, purpose) >> np.uint64(32)
    return np.int64((h * np.uint64(n)) >> np.uint64(32))


def threshold53(prob: float) -> int:
    """Integer threshold t with P(draw53 < t) = prob (to 2**-53)."""
    prob = min(max(float(prob), 0.0), 1.0)
    return int(round(prob * (1 << 53)))
