"""Pins the Python peer to the SQL its release ships with.

cairnq 0.15.1 looks for a `cairnq-protocol/` directory in the folders above
its install location before it uses its own vendored copy (a convenience
for its monorepo). This workspace has a crate of that name at its root and
the test venv lives inside the workspace, so without this pin the peer
would load this workspace's SQL files instead of its own. Import this
module before `cairnq`.
"""

import importlib.util
import os
from pathlib import Path

_spec = importlib.util.find_spec("cairnq")
if _spec is not None and _spec.submodule_search_locations:
    _vendored = Path(next(iter(_spec.submodule_search_locations))) / "_protocol"
    if (_vendored / "sql").is_dir():
        os.environ["CAIRNQ_PROTOCOL_DIR"] = str(_vendored)
