"""Uniform random, random permutation and shift traffic (000 Sec. V-B, 001 Sec. 4.2)."""
import numpy as np

from models.core.errors import ParameterError
from models.core.registry import TRAFFIC, Param
from models.traffic import TrafficPlan


def uniform(topo, seed):
    """Every packet goes to an endpoint drawn uniformly among all other endpoints."""
    E = topo.n_endpoints
    if E < 2:
        raise ParameterError("traffic.pattern: uniform traffic needs at least 2 endpoints")
    return TrafficPlan("uniform", np.zeros(E, dtype=np.int32), "uniform random")


def randperm(topo, seed):
    """A fixed random permutation of the endpoints without fixed points (seeded)."""
    E = topo.n_endpoints
    if E < 2:
        raise ParameterError("traffic.pattern: randperm needs at least 2 endpoints")
    rng = np.random.default_rng([int(seed), 0x7E4A])
    perm = rng.permutation(E)
    # remove fixed points by swapping each with its successor fixed-point-free partner
    # remove fixed points: swapping a fixed point i with i+1 never creates a new one,
    # so each swap removes at least one (expected about one swap in total)
    while True:
        fixed = np.nonzero(perm == np.arange(E))[0]
        if fixed.size == 0:
            break
        i = int(fixed[0])
        j = (i + 1) % E
        perm[i], perm[j] = perm[j], perm[i]
    assert not np.any(perm == np.arange(E))
    return TrafficPlan("table", perm.astype(np.int32), "random permutation")


def shift(topo, seed, s=1):
    """Endpoint ``e`` sends to ``(e + s) mod E`` (001 Sec. 4.2: s = h / s = k worst cases)."""
    E = topo.n_endpoints
    if s % E == 0:
        raise ParameterError(f"traffic.s: shift by {s} maps every endpoint to itself (E = {E})")
    return TrafficPlan("table", ((np.arange(E) + s) % E).astype(np.int32), f"shift by {s}")


TRAFFIC.register("uniform", uniform, params=[], summary="uniform random destinations",
                 reference="000 Sec. V-B")
TRAFFIC.register("randperm", randperm, params=[],
                 summary="fixed random permutation of the endpoints (seeded by measure.seed)",
                 reference="000 Sec. V-B")
TRAFFIC.register("shift", shift, params=[Param("s", int, 1, "shift distance in endpoints")],
                 summary="endpoint e sends to (e + s) mod N", reference="001 Sec. 4.2")
