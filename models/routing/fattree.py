"""Fat-tree routing: ANCA (000 Sec. V), adaptive up to a nearest common ancestor."""
from models.core.errors import ParameterError
from models.core.registry import ROUTINGS, Param
from models.routing.minimal import SCHEME_DOC, min_adaptive


def anca(topo, dist, vc_scheme="phase"):
    """ANCA on fat trees: adaptive up to a nearest common ancestor, deterministic down.

    On a fat tree every up port is minimal towards the nearest common
    ancestor and the down path is unique, so adaptive minimal routing is
    exactly ANCA (000 Sec. V uses it for FT-3).  Up*/down* paths are acyclic,
    so one VC class suffices (``phase``; checked by ``pdes check``).
    """
    if topo.name != "fattree":
        raise ParameterError(f"routing.algorithm: 'anca' is for fat trees (topology is "
                             f"'{topo.name}'); use 'min_adaptive' elsewhere")
    return min_adaptive(topo, dist, "phase" if vc_scheme == "auto" else vc_scheme)


ROUTINGS.register("anca", anca,
                  params=[Param("vc_scheme", str, "phase", SCHEME_DOC, choices=("auto", "hop", "phase"))],
                  summary="fat tree ANCA: adaptive up, deterministic down",
                  reference="000 Sec. V; Gomez et al. (ANCA)")
