"""`python -m cudnn_doctor`."""

from cudnn_doctor.cli import entrypoint

entrypoint()
