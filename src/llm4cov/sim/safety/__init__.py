"""What stands between an untrusted testbench and the host: the static check, the
bounded parses, the pre-check, the OS sandbox, process bounds, the host environment,
work dirs and the stimulus-only rule."""
