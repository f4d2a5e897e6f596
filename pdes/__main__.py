"""Entry point: ``python -m pdes COMMAND ...`` (see ``pdes.cli``)."""
import gc
import os
import sys

# A rank is one core: NumPy's OpenBLAS would otherwise start a thread per core when it
# loads, threads that wake and spin beside the ranks (8% of the CPU time of the default
# 2-rank run).  A value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from pdes.cli import main  # noqa: E402  (after the variable above, which NumPy reads)

if __name__ == "__main__":
    rc = main()
    # The interpreter's last full garbage collection would walk every object of Numba's
    # type system and of the loaded kernels: 0.3-0.4 s at the end of every simulating
    # command.  The process ends here, so it is skipped (files are closed and MPI is
    # finalized by their own exit handlers, which still run).
    gc.freeze()
    from pdes.files import hdf5_unclosed
    if hdf5_unclosed():
        # a failed write left HDF5 a file it cannot close, which it would try again after
        # the interpreter's end and crash there: the process ends now, with its status
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    sys.exit(rc)
