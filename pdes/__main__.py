"""Entry point: ``python -m pdes COMMAND ...`` (see ``pdes.cli``)."""
import gc
import sys

from pdes.cli import main

if __name__ == "__main__":
    rc = main()
    # The interpreter's last full garbage collection would walk every object of Numba's
    # type system and of the loaded kernels: 0.3-0.4 s at the end of every simulating
    # command.  The process ends here, so it is skipped (files are closed and MPI is
    # finalized by their own exit handlers, which still run).
    gc.freeze()
    sys.exit(rc)
