"""What the evaluator reads of a design and a testbench: structure plan, instances,
testbench workarounds and hints, fidelity notes, the RTL-alone check."""
