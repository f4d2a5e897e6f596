"""The routing functions :mod:`pdes.kernels.routed` imports as it stands: they route nothing
(every head flit gets ``ERR_ROUTE``).  Generated copies import a routing kernel's instead."""
from models.core.jit import njit_inline
from models.core.record import ERR_ROUTE


@njit_inline
def source(t, k, rg, plo, nepk, phi, ctx, ap, prm, ports, tab, crd, rec, rec_c, fid):
    """No decision at the source."""
    return


@njit_inline
def hop(t, k, rg, plo, nepk, phi, P, in_cls, ctx, ap, prm, ports, tab, crd, rec, rec_c, fid):
    """No route."""
    return ERR_ROUTE, -1, 0
