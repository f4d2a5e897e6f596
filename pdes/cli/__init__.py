"""Command line: ``python -m pdes {run,topo,info,...}``.

Each subcommand is a module in this package with ``HELP`` (one line),
``add_arguments(parser)`` and ``main(args) -> int``.  Errors the user can fix
(:class:`models.core.errors.ParameterError`) are printed as one line prefixed with
``pdes: error:`` and give exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from models.core.errors import ParameterError

COMMANDS = ("run", "sweep", "show", "plot", "topo", "info", "check", "analyze", "design",
            "compile", "cache")


def _available():
    out = {}
    for name in COMMANDS:
        try:
            out[name] = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    return out


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse's own convention)
        self.exit(2, f"pdes: error: {message}\n")


def build_parser():
    parser = _Parser(prog="python -m pdes", description="Flit-level simulator of HPC networks.")
    from pdes import __version__
    parser.add_argument("--version", action="version", version=f"pdes {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    mods = _available()
    for name, mod in mods.items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_main=mod.main)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    from pdes.cli.common import one_line, stdout_closed
    try:
        status = int(args._main(args) or 0)
        sys.stdout.flush()             # a failure to write the output is the command's
        return status
    except ParameterError as exc:
        print(f"pdes: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pdes: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:            # stdout closed by the reader (e.g. piped into head)
        return stdout_closed()
    except OSError as exc:             # the machine's refusal (a full disk, a read-only file
        # system, standard output on a full device): one line, as the simulating commands
        # give it, not a traceback; what is still buffered for standard output is dropped
        print(f"pdes: error: {type(exc).__name__}: {one_line(exc)}", file=sys.stderr)
        try:
            sys.stdout.flush()
        except OSError:
            stdout_closed()
        return 3
