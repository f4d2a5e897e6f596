"""Numba kernels of the engine: arrays and scalars in, no MPI/h5py/registries inside.

They are compiled through the project's jit wrapper (:mod:`models.core.jit`),
whose cache directory is keyed on every project source, so an edit to any
kernel module never leaves a stale compiled kernel behind.
"""
