"""flexmbs_laws: physical laws that both the multibody core and the FMU runtime use, in plain
Python (`math` only, importing nothing of ours), so that one law has one place:

- `motor`: the geared DC motor (armature circuit, back-EMF, gear losses, parameter table),
  which the `dc_motor` block (flexmbs_fmu/motor.py) runs as it is, the core's kernels compile
  for the plant's `motor` drives (flexmbs/kernels/motor.py) and the model checks read for the
  parameters' units and bounds (flexmbs/model/tables.py).

A block's FMU carries this package and none of the core.
"""
