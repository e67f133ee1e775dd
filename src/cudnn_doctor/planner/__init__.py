"""`plan`: from the wanted frameworks, OS, Python, GPU, driver and CUDA, the newest stack that works and
the commands that install it. request -> candidates -> constraints -> solver -> commands; prints nothing."""

from cudnn_doctor.planner.request import Request, Wanted, parse_framework
from cudnn_doctor.planner.solver import Plan, solve

__all__ = ["Plan", "Request", "Wanted", "parse_framework", "solve"]
