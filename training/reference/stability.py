"""MuJoCo resets a state that blew up and carries on; a reference sequence must stop instead."""

import mujoco

BLOW_UPS = (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQVEL, mujoco.mjtWarning.mjWARN_BADQPOS)


def refuse_instability(data, frame: int) -> None:
    """Raise RuntimeError naming the frame if MuJoCo met a non-finite or huge state so far."""
    for kind in BLOW_UPS:
        if data.warning[kind].number:
            raise RuntimeError(f"MuJoCo went unstable ({kind.name}) before frame {frame} and reset the state")
