"""Simulated NVIDIA stacks shared by the tests, tools/ and bench/: the NVML simulator and the catalog of
simulated GPU models. Not part of the collection (galaxy.yml build_ignore)."""
