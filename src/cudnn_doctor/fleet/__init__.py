"""`cudnn-doctor fleet`: the doctor on every node of a cluster, nodes grouped by stack, drift shown (issue 14).

`model` holds the values and the aggregation (it imports only facts and findings, so the reports
can render a fleet without loading a probe); `nodes` turns snapshots into node results by running
the checks on each through a FixtureSystem (no machine is read); `ray_engine` gathers the snapshots
from a Ray cluster, one task pinned to each alive node; `node` is what such a task runs there.
Nothing is imported here: a report importing `fleet.model` must not load the rest.
"""
