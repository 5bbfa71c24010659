// The tests use the benchmarks' synthetic tensors and random generator as their own.
@_exported import SyntheticTensors
