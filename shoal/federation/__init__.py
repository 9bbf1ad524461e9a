"""Many clusters (seed 000): the member adapters, the dispatch policy and the dispatcher
that sends one job to several clusters and keeps one copy.

The dispatch policy is pure (a clock is an argument), so the simulator's what-if and the
live dispatcher run the same code; adapters and the dispatcher own the I/O.
"""
