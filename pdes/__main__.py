"""Entry point: ``python -m pdes COMMAND ...`` (see ``pdes.cli``)."""
import sys

from pdes.cli import main

if __name__ == "__main__":
    sys.exit(main())
