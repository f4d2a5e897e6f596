"""Models: topologies, physical layout, routing, traffic, analyses.

``models`` imports neither ``pdes`` nor ``partition``.
"""
from models.core.errors import ParameterError
from models.core.registry import TOPOLOGIES, ROUTINGS, TRAFFIC, Param
from .topology import Topology, build, from_edges

__all__ = ["ParameterError", "TOPOLOGIES", "ROUTINGS", "TRAFFIC", "Param", "Topology",
           "build", "from_edges"]
