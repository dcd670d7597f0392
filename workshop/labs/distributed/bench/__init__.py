"""The distributed lab's benchmarks (`python -m workshop bench distributed`)."""
