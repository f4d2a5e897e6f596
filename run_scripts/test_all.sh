#!/usr/bin/env bash
# Install pdes with its test extras and run every test tier of the default suite:
# serial tests, then the MPI tests under mpiexec -n 2 and -n 4 (see README "Tests").
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -e ".[test]"
python -m pytest -q
if python -m pytest -q --co -m "mpi and not slow" >/dev/null 2>&1; then
    mpiexec -n 2 python -m pytest -q --with-mpi -m "mpi and not slow" -p no:cacheprovider
    mpiexec -n 4 python -m pytest -q --with-mpi -m "mpi and not slow" -p no:cacheprovider
fi
