"""Writing an output file whole (:mod:`models.core.files`, where the compiled-code cache
writes its files the same way): every file pdes writes goes to a temporary name beside it
and is renamed to its own name when complete."""
from models.core.files import TMP_SUFFIX, replaced_when_whole  # noqa: F401
