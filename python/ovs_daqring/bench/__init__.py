"""daq-bench (utilities/daq-bench, daq-bench(1)): the benchmarks of "make
bench" (Documentation/topics/bench.rst)."""
