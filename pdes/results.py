"""Reading result files: a run file (``pdes run``) or a study file (``pdes sweep``).

:func:`open_results` checks the file and gives a small reader used by
``pdes show`` and ``pdes plot``; users can equally read the files with plain
h5py or pandas (``pandas.DataFrame(h5py.File(f)["table"][()])``).
"""
from __future__ import annotations

import contextlib
import json

import numpy as np

from models.core.errors import ParameterError


class Results:
    """An open run or study file."""

    def __init__(self, f, path: str):
        self.f = f
        self.path = path
        fmt = f.attrs.get("format")
        if fmt == "pdes-results":
            self.kind = "run"
        elif fmt == "pdes-study":
            self.kind = "study"
        else:
            raise ParameterError(f"file: {path} is not a pdes result or study file")

    def has(self, name: str) -> bool:
        return name in self.f

    @property
    def finished(self) -> bool:
        return bool(self.f.attrs.get("finished", True))

    @property
    def varied_keys(self) -> list[str]:
        return json.loads(self.f.attrs["varied_keys"]) if self.kind == "study" else []

    def summary(self, point: str | None = None) -> dict:
        g = self.group(point)["summary"]
        return {k: plain(g[k][()]) for k in g}

    def group(self, point: str | None = None):
        """The run group: the file itself for a run file, ``/points/<point>`` in a study."""
        if self.kind == "run":
            if point:
                raise ParameterError("--point: only a study file has points")
            return self.f
        if point is None:
            raise ParameterError("--point: name one point of the study (see 'pdes show')")
        if point not in self.f["points"]:
            raise ParameterError(f"--point: no point '{point}' in {self.path} "
                                 f"(points: {', '.join(list(self.f['points'])[:6])}, ...)")
        return self.f["points"][point]

    def frame(self, name: str = "table"):
        """A study table as a pandas DataFrame, strings decoded."""
        import pandas as pd
        df = pd.DataFrame(self.f[name][()])
        for col in df.columns:
            if df[col].dtype == object:
                df[col] = [v.decode() if isinstance(v, bytes) else v for v in df[col]]
        return df


def plain(v):
    """An HDF5 value as a plain Python value (bytes decoded, numpy scalars unwrapped)."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.generic):
        return v.item()
    return v


@contextlib.contextmanager
def open_results(path: str):
    """Open a result or study file for reading, with one-line errors for bad files."""
    import os

    import h5py
    if not os.path.isfile(path):
        raise ParameterError(f"file: {path} does not exist or is not a regular file")
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise ParameterError(f"file: {path} is not an HDF5 file") from None
    try:
        yield Results(f, path)
    finally:
        f.close()
