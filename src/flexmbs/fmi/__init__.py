"""Host-side FMU tools: build FMUs (build.py), co-simulate them (cosim.py, ssp.py, servo.py)
and run design studies on them (sweep/). What runs inside an FMU is the package flexmbs_fmu
(fmu_src/), which never imports this one."""
