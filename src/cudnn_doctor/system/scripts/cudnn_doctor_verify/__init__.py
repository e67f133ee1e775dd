"""Run inside a *target* interpreter: time one framework's GPU and CPU kernels and print the raw figures.

The doctor puts the folder that holds this package at the front of the child's `sys.path` and calls
`main.main(sys.argv)` (`System.run_worker`, called by verify/run.py); it never imports it itself, so the package
stands alone (standard library, the framework and, for all but torch, numpy, which they all depend
on). It measures; the doctor judges (rates, % of peak, verdicts) with its knowledge.

CONFIG is JSON: {"framework": "torch", "quick": bool, "cpu_only": bool}; {"framework": ..., "selftest":
true} instead returns a convolution and a matrix product of fixed small inputs on the CPU, so a test can
check the framework's layout handling against a reference. Progress lines ("3/17 matmul-8192-bf16 on
the GPU") are appended, as each step starts, to the file $CUDNN_DOCTOR_PROGRESS names, so the doctor
can show a bar. One JSON object follows the marker line on stdout.

One backend module per framework (`<framework>_backend.py`, each with `run(config)`); every framework
runs the same cases (`common.plan()`, same ids), so the doctor's verdicts apply to each; a case a
framework has no switch for is left out and said in the report's "notes".
"""
