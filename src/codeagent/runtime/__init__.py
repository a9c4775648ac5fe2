"""The process roles: the resident daemon (daemon/: its client, server and forked children),
the warm reader (warm.py), the watcher's builder (watch_builder.py) and the forked worker pools
(pool.py). docs/design/processes.md says who starts whom and who owns which socket and lock.

Imports nothing: `codeagent`'s console script enters through daemon/ on the standard
library alone."""
