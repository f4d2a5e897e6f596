"""pdes: MPI-parallel, flit-level simulator of HPC interconnection networks."""
__version__ = "0.1.0"
