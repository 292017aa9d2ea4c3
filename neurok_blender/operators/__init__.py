"""Thin operators: each checks context, calls a plain function in ``api`` and reports."""

from .clear import NEUROK_OT_clear
from .export import NEUROK_OT_export
from .forces import NEUROK_OT_force_add, NEUROK_OT_force_remove
from .live import NEUROK_OT_live
from .simulate import NEUROK_OT_simulate

CLASSES = (NEUROK_OT_simulate, NEUROK_OT_live, NEUROK_OT_clear, NEUROK_OT_export, NEUROK_OT_force_add, NEUROK_OT_force_remove)
