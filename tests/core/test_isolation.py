import subprocess
import sys


def _run(code):
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_core_and_package_import_without_blender():
    """core/ never imports bpy, and importing the add-on package alone needs no Blender either."""
    assert _run("import sys; sys.modules['bpy'] = None; import neurok_blender\n"
                "from neurok_blender.core import *; print('ok')") == "ok"


def test_the_options_import_without_torch():
    """The add-on reads its choices from core.options when Blender starts; torch loads with the solver."""
    code = ("import sys; import neurok_blender.core.options as o; from neurok_blender.core import Conditions\n"
            "Conditions(category='cloth', integrator='rk4').check(3); print('torch' in sys.modules)")
    assert _run(code) == "False"
    assert _run("import sys; from neurok_blender.core import simulate; print('torch' in sys.modules)") == "True"


def test_a_first_simulate_does_not_load_torchs_compiler():
    """torch.func's forward mode imports torch._dynamo on first use, a tensor of output gradients
    sympy, and torchdiffeq scipy.integrate: about 2 s of the first Simulate in a Blender session. No
    step of a build or of a run by the default integrator needs them."""
    code = ("import sys; from neurok_blender.core import Conditions, Force, NeuROK\n"
            "from neurok_blender.core.mesh import box_mesh, subdivided\n"
            "v, f = subdivided(*box_mesh((0.3, 0.3, 0.3), (0.0, 0.0, 0.1)))\n"
            "NeuROK.load().simulate(v, f, Conditions(frames=6, category='elastic', forces=[Force((0, 0, 20), vertices=[0])]))\n"
            "print(sorted({'torch._dynamo', 'sympy', 'torchdiffeq'} & set(sys.modules)))")
    assert _run(code) == "[]"


def test_every_integrator_name_is_a_stepper_of_one_kind():
    from neurok_blender.core.integrators import ADAPTIVE, FIXED_STEP, IMPLICIT, STEPPERS, STRUCTURE_PRESERVING
    from neurok_blender.core.options import AUTO, METHODS

    assert sorted(STEPPERS) == sorted(FIXED_STEP + ADAPTIVE + STRUCTURE_PRESERVING + IMPLICIT)
    assert METHODS == (AUTO, *STEPPERS)
