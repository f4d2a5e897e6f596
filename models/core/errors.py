"""User-facing errors raised by models (topologies, routing, traffic, layout).

A :class:`ParameterError` carries one line that names the offending parameter
and the rule it breaks.  The CLI prints it as-is and exits with status 2; it
is never shown as a traceback.
"""


class ParameterError(ValueError):
    """Invalid user input: unknown name, impossible parameter, malformed file."""
