"""Numba kernels of the engine: arrays and scalars in, no MPI/h5py/registries inside."""
