"""Read-only arrays held once per node: MPI-3 shared memory over a ``COMM_TYPE_SHARED`` split.

Every rank of a run needs the same read-only tables (topology, link
latencies, distances, routing and traffic tables).  :class:`NodeShare` gives
each of them to the ranks of one node as one copy in a shared window
(``MPI.Win.Allocate_shared``), allocated and filled once per node:

* :meth:`NodeShare.array` -- an array of a known shape, filled in place by the
  node's rank 0 (``fill(out)``) or by every rank of the node for its slice of
  rows (``rows(lo, hi)``, e.g. the all-pairs distances);
* :meth:`NodeShare.build` -- arrays of a shape only the builder knows: the
  node's rank 0 calls ``build()``, the others receive shapes and dtypes (an
  exception raised by ``build`` is raised on every rank);
* :meth:`NodeShare.adopt` -- the large arrays of an object every rank built the
  same (a routing plan, a traffic plan) replaced by one node copy.

Whether the shared copy is used is decided collectively for each array: if
``Allocate_shared`` fails on any rank (or ``NodeShare(comm, shared=False)``),
every rank gets a private copy of the same array instead (broadcast from the
node's rank 0, or for ``rows`` gathered from all ranks).  Either way the values
are the same, so results do not depend on it.

The windows are kept in :attr:`NodeShare.keep`, which must live as long as the
arrays (:class:`pdes.build.Prepared` holds it).  The shared arrays are
read-only by contract: nothing may write them after they are filled.

Library code takes the communicator as an argument; with ``comm=None`` or one
rank every method simply builds a private array.
"""
from __future__ import annotations

import numpy as np

MIN_SHARED_BYTES = 1 << 16
"""Arrays smaller than this stay private in :meth:`NodeShare.adopt` (a window costs a page)."""


class NodeShare:
    """The ranks of ``comm`` grouped by node, and the shared windows made for them."""

    def __init__(self, comm=None, shared: bool = True):
        self.comm = comm if comm is not None and comm.Get_size() > 1 else None
        self.want_shared = bool(shared)
        self.keep: list = []         # the node communicator and the windows (live with the arrays)
        self.arrays: list = []       # the node-shared arrays handed out
        self.node = None
        self.private_bytes = 0      # bytes of fallback copies this rank holds
        if self.comm is not None:
            from mpi4py import MPI
            self.node = self.comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.comm.Get_rank())
            self.keep.append(self.node)

    @property
    def node_rank(self) -> int:
        return 0 if self.node is None else self.node.Get_rank()

    @property
    def node_size(self) -> int:
        return 1 if self.node is None else self.node.Get_size()

    # ------------------------------------------------------------ allocation
    def _window(self, shape, dtype):
        """(node-shared array, its window): every rank of the node maps the same memory; or
        (None, None) on every rank when any rank of ``comm`` could not allocate one."""
        from mpi4py import MPI
        dtype = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        win = None
        if self.want_shared:
            try:
                win = MPI.Win.Allocate_shared(max(n, 1) if self.node.Get_rank() == 0 else 0,
                                              dtype.itemsize, comm=self.node)
            except (MPI.Exception, NotImplementedError):   # pragma: no cover - depends on the MPI
                win = None
        if self.comm.allreduce(0 if win is None else 1, op=MPI.MIN) == 0:
            if win is not None:
                win.Free()
            return None, None
        self.keep.append(win)
        buf, _ = win.Shared_query(0)
        out = np.ndarray(shape, dtype=dtype, buffer=buf)
        self.arrays.append(out)
        return out, win

    def is_shared(self, arr) -> bool:
        """Whether ``arr`` is (a view of) one of the node-shared arrays."""
        return isinstance(arr, np.ndarray) and any(np.may_share_memory(arr, a) for a in self.arrays
                                                   if a.size)

    @property
    def node_bytes(self) -> int:
        """Bytes of the node-shared arrays (one copy per node)."""
        return int(sum(a.nbytes for a in self.arrays))

    # ---------------------------------------------------------------- arrays
    def array(self, shape, dtype, *, fill=None, rows=None) -> np.ndarray:
        """An array of ``shape`` and ``dtype`` filled once per node (collective over ``comm``).

        ``fill(out)`` fills the whole array (called on the node's rank 0 only);
        ``rows(lo, hi)`` returns rows ``lo..hi-1`` (the ranks of a node each fill a
        contiguous slice in place; in the fallback the slices are split over all ranks
        of ``comm`` and gathered).  Give exactly one of them.
        """
        if (fill is None) == (rows is None):
            raise TypeError("NodeShare.array: give fill or rows")
        shape = tuple(int(s) for s in shape)
        if self.comm is None:
            out = np.empty(shape, dtype=dtype)
            if fill is not None:
                fill(out)
            elif shape[0]:
                out[:] = rows(0, shape[0])
            return out
        out, win = self._window(shape, dtype)
        if out is not None:
            n, k = self.node_size, self.node_rank
            win.Fence()
            if fill is not None:
                if k == 0:
                    fill(out)
            else:
                lo, hi = (shape[0] * k) // n, (shape[0] * (k + 1)) // n
                if hi > lo:
                    out[lo:hi] = rows(lo, hi)
            win.Fence()               # every rank sees the whole array from here on
            return out
        return self._private(shape, dtype, fill, rows)

    def _private(self, shape, dtype, fill, rows) -> np.ndarray:
        """The fallback: a copy per rank, with the same values as the shared array."""
        from mpi4py import MPI
        out = np.empty(shape, dtype=dtype)
        self.private_bytes += out.nbytes
        if fill is not None:
            if self.node_rank == 0:
                fill(out)
            self.node.Bcast(_bytes(out), root=0)
            return out
        size, rank = self.comm.Get_size(), self.comm.Get_rank()
        bounds = [(shape[0] * i) // size for i in range(size + 1)]
        if bounds[rank + 1] > bounds[rank]:
            out[bounds[rank]:bounds[rank + 1]] = rows(bounds[rank], bounds[rank + 1])
        row = out[:1].nbytes if shape[0] else 0
        counts = [(bounds[i + 1] - bounds[i]) * row for i in range(size)]
        displs = [bounds[i] * row for i in range(size)]
        self.comm.Allgatherv(MPI.IN_PLACE, [_bytes(out), counts, displs, MPI.BYTE])
        return out

    def build(self, build):
        """``build()`` (a tuple of arrays, or one array, or ``None`` entries) called on the node's
        rank 0 only; every rank receives the same arrays, node-shared (collective).

        An exception raised by ``build`` is raised on every rank of the node.
        """
        if self.comm is None:
            return build()
        made, err = None, None
        if self.node_rank == 0:
            try:
                made = build()
            except Exception as exc:           # re-raised on every rank of the node below
                err = exc
        single = not isinstance(made, tuple)
        meta = None if err is not None else (
            single, [None if a is None else (a.shape, a.dtype.str)
                     for a in ((made,) if single else made)])
        err, meta = self.node.bcast((err, meta), root=0)
        if err is not None:
            raise err
        single, shapes = meta
        arrs = (made,) if single else made
        out = []
        for i, sd in enumerate(shapes):
            if sd is None:
                out.append(None)
                continue
            src = arrs[i] if arrs is not None else None
            out.append(self.array(sd[0], np.dtype(sd[1]), fill=lambda o, src=src: _copy(o, src)))
        return out[0] if single else tuple(out)

    def object(self, build, touch=()):
        """An object built by ``build()`` on the node's rank 0 only, whose array attributes (and
        tuples of arrays) every rank of the node maps from shared memory (collective).

        ``touch`` names attributes to evaluate on the builder first (cached properties), so
        that they are shared too instead of computed again by every rank.  The object's
        other attributes are pickled to the other ranks of the node; an array reachable
        under two names is shared once.  An exception raised by ``build`` is raised on
        every rank of the node.
        """
        if self.comm is None:
            obj = build()
            for name in touch:
                getattr(obj, name)
            return obj
        obj, err, skeleton, layout = None, None, None, None
        if self.node_rank == 0:
            try:
                obj = build()
                for name in touch:
                    getattr(obj, name)
            except Exception as exc:           # re-raised on every rank of the node below
                err = exc
        if obj is not None:
            arrays, index, layout, skeleton = [], {}, {}, {}
            for k, v in vars(obj).items():
                items = v if isinstance(v, tuple) and v and all(
                    isinstance(x, np.ndarray) for x in v) else None
                if isinstance(v, np.ndarray) and v.nbytes >= MIN_SHARED_BYTES:
                    items = (v,)
                if items is None:
                    skeleton[k] = v
                    continue
                for x in items:
                    if id(x) not in index:
                        index[id(x)] = len(arrays)
                        arrays.append(np.ascontiguousarray(x))
                layout[k] = (isinstance(v, tuple), [index[id(x)] for x in items])
            shapes = [(a.shape, a.dtype.str) for a in arrays]
            skeleton = (type(obj), skeleton, layout, shapes)
        err, skeleton = self.node.bcast((err, skeleton), root=0)
        if err is not None:
            raise err
        cls, plain, layout, shapes = skeleton
        if self.comm.allreduce(len(shapes)) != len(shapes) * self.comm.Get_size():
            raise RuntimeError("NodeShare.object: the nodes built different objects")
        shared = []
        for i, (shape, dt) in enumerate(shapes):
            src = arrays[i] if obj is not None else None
            shared.append(self.array(shape, np.dtype(dt), fill=lambda o, src=src: _copy(o, src)))
        if obj is None:
            obj = cls.__new__(cls)
            vars(obj).update(plain)
        for k, (is_tuple, ids) in layout.items():
            vars(obj)[k] = tuple(shared[i] for i in ids) if is_tuple else shared[ids[0]]
        return obj

    def adopt(self, arr: np.ndarray) -> np.ndarray:
        """The node copy of an array every rank of ``comm`` holds identically (collective): the
        node's rank 0's values, once per node; the caller drops its own."""
        if self.comm is None or arr.nbytes < MIN_SHARED_BYTES or self.is_shared(arr):
            return arr
        return self.array(arr.shape, arr.dtype, fill=lambda o: _copy(o, arr))

    def adopt_attrs(self, obj, names=None) -> None:
        """Replace the large array attributes of ``obj`` (or values of a dict) by node copies
        (collective; every rank must hold the same arrays under the same names)."""
        if self.comm is None:
            return
        d = obj if isinstance(obj, dict) else vars(obj)
        keys = sorted(k for k, v in d.items() if isinstance(v, np.ndarray) and v.nbytes >= MIN_SHARED_BYTES
                      and (names is None or k in names))
        if any(other != keys for other in self.comm.allgather(keys)):
            raise RuntimeError(f"NodeShare.adopt_attrs: the ranks hold different arrays ({keys})")
        for k in keys:
            d[k] = self.adopt(np.ascontiguousarray(d[k]))

    def free(self) -> None:
        """Release the windows (the arrays must no longer be used)."""
        for obj in reversed(self.keep):
            obj.Free()
        self.keep.clear()


def _copy(out: np.ndarray, src: np.ndarray) -> None:
    out[...] = src


def _bytes(a: np.ndarray) -> np.ndarray:
    """A contiguous array's memory as a flat byte view (for MPI.BYTE transfers)."""
    return a.reshape(-1).view(np.uint8)
