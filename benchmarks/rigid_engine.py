"""The engine on the rigid map: milliseconds per simulated frame and energy behaviour, by integrator.

    .venv/bin/python -m benchmarks.rigid_engine

Writes benchmarks/results/rigid_engine.json, rigid_engine.md and rigid_energy.png.
"""

import platform
import time

import numpy as np
import torch

from benchmarks import RESULTS, write_results
from neurok_blender.core import Conditions, Environment, LagrangianSystem, RigidBodyMap, rollout, simulate
from neurok_blender.core.mesh import box_mesh
from training.shapes.solids import uv_sphere

INTEGRATORS = ("implicit", "leapfrog", "rk4", "midpoint", "dopri5")  # implicit: what auto runs
DOWN = torch.tensor([0.0, 0.0, -9.81], dtype=torch.float64)


def speed_table():
    """ms per simulated frame (24 fps), throw in the air and throw onto the ground."""
    rows = []
    scenes = {
        "box in flight": (box_mesh((0.4, 1.0, 2.0)), dict(velocity=(1, 0, 3), angular_velocity=(1, 4, 0.5))),
        "box onto ground": (box_mesh((0.4, 1.0, 2.0)), dict(velocity=(1, 0, 0), angular_velocity=(1, 4, 0.5), ground_height=-0.5)),
        "UV sphere 2550 v onto ground": (uv_sphere(), dict(velocity=(1, 0, 0), angular_velocity=(0, 3, 0), ground_height=-1.5)),
    }
    for name, ((v, f), extra) in scenes.items():
        for method in INTEGRATORS:
            cond = Conditions(frames=49, fps=24, integrator=method, **extra)
            began = time.perf_counter()
            result = simulate(v, f, cond)
            elapsed = time.perf_counter() - began
            rows.append({"scene": name, "integrator": method, "ms_per_frame": 1000 * elapsed / 48,
                         "energy_balance_J": float(abs(result.energy["balance"]).max()),
                         "total_energy_J": float(abs(result.energy["total"][0]))})
            print(f"{name:28s} {method:9s} {rows[-1]['ms_per_frame']:8.1f} ms/frame", flush=True)
    return rows


def drift_table(seconds=10.0, fps=48, substeps=2):
    """Conservative runs: relative energy drift of a tumbling box under gravity, same step for all."""
    rows, curves = [], {}
    v, f = box_mesh((0.4, 1.0, 2.0))
    for method in INTEGRATORS:
        kmap, _ = RigidBodyMap.from_meshes([(v, f)], [3.0])
        q_dot = torch.tensor([[0.3, -0.2, 1.0, 1.0, 4.0, 0.5]], dtype=torch.float64)
        system = LagrangianSystem(kmap, Environment(gravity=DOWN))
        frames = int(seconds * fps) + 1
        began = time.perf_counter()
        traj = rollout(system, kmap.rest_coordinates(), q_dot, frames, fps, method, kmap.mass_points, substeps=substeps)
        elapsed = time.perf_counter() - began
        total, kinetic = traj.energy["total"][:, 0], traj.energy["kinetic"][:, 0]
        drift = (total - total[0]) / kinetic.max()
        curves[method] = (traj.times, drift)
        rows.append({"integrator": method, "steps": (frames - 1) * substeps, "seconds": seconds,
                     "max_relative_drift": float(np.abs(drift).max()), "final_relative_drift": float(drift[-1]),
                     "ms_per_frame": 1000 * elapsed / (frames - 1)})
        print(f"drift {method:9s} max {rows[-1]['max_relative_drift']:.2e}", flush=True)
    return rows, curves


def plot(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.2), dpi=110)
    for method, (t, drift) in curves.items():
        ax.semilogy(t, np.maximum(np.abs(drift), 1e-16), label=method, lw=1.2)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("|E(t) - E(0)| / max T")
    ax.set_title("Energy drift, tumbling box under gravity, h = 1/96 s")
    ax.legend(ncols=4, fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)


def markdown(speed, drift):
    lines = ["| scene | integrator | ms / frame | max energy balance error (J) | total energy (J) |",
             "|---|---|---:|---:|---:|"]
    lines += [f"| {r['scene']} | {r['integrator']} | {r['ms_per_frame']:.1f} | {r['energy_balance_J']:.2e} | "
              f"{r['total_energy_J']:.2f} |" for r in speed]
    lines += ["", "| integrator | frames x substeps | max relative drift | final relative drift | ms / frame |",
              "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['integrator']} | {r['steps']} | {r['max_relative_drift']:.2e} | {r['final_relative_drift']:.2e} | "
              f"{r['ms_per_frame']:.1f} |" for r in drift]
    return "\n".join(lines)


def main():
    torch.set_num_threads(1)
    RESULTS.mkdir(exist_ok=True)
    speed = speed_table()
    drift, curves = drift_table()
    plot(curves, RESULTS / "rigid_energy.png")
    machine = f"{platform.machine()}, {torch.get_num_threads()} torch thread(s), torch {torch.__version__}"
    table = markdown(speed, drift)
    print(table)
    write_results("rigid_engine", f"Machine: {machine}\n\n{table}", machine=machine, speed=speed, drift=drift)


if __name__ == "__main__":
    main()
