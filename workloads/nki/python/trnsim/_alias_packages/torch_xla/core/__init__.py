"""torch_xla.core of trnsim's torch_xla stand-in."""
