"""The routing functions :mod:`pdes.kernels.routed` imports as it stands: they route nothing
(every head flit gets ``ERR_ROUTE``).  Generated copies import a routing kernel's instead, and
this ``source`` (no decision at a packet's first router) when the routing has none."""
from models.core.jit import njit_inline
from models.core.record import ERR_ROUTE


@njit_inline
def source(site, eng, ctx, ap, fid):
    """No decision at the source."""
    return


@njit_inline
def hop(site, eng, ctx, ap, fid):
    """No route."""
    return ERR_ROUTE, -1, 0
