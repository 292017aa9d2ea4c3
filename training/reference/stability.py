"""MuJoCo resets a state that blew up and carries on; a reference sequence must stop instead.

MuJoCo's warnings go to Python's logging (logger "mujoco") from the moment this module is imported:
its default handler also appends them to MUJOCO_LOG.TXT in the working folder (the repository root
during the tests and the corpus runs). The counts in ``data.warning``, which the reference simulators
record and check, are kept either way.
"""

import logging

import mujoco

BLOW_UPS = (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQVEL, mujoco.mjtWarning.mjWARN_BADQPOS)


def _log_warning(message: str) -> None:
    logging.getLogger("mujoco").warning(message)


mujoco.set_mju_user_warning(_log_warning)


def refuse_instability(data, frame: int) -> None:
    """Raise RuntimeError naming the frame if MuJoCo met a non-finite or huge state so far."""
    for kind in BLOW_UPS:
        if data.warning[kind].number:
            raise RuntimeError(f"MuJoCo went unstable ({kind.name}) before frame {frame} and reset the state")
