"""A cloth sheet dropped on a table: whether the learned cloth drapes, and whether its coordinates could.

    .venv/bin/python -m benchmarks.drape [--weights W ...]        # about 2 min per weights

A 1 m square sheet (triangles of 6 cm) dropped from 0.7 m onto a 0.6 m square table 0.5 m high (a
collider, friction 0.6, thickness 1 cm), 2 s at 24 fps. The reference is Blender Cloth
(``training.reference.cloth``). At 2 s, for each run: the top's sag, the deepest any vertex over the
table's middle (0.5 m square) lies below the table's top plus its thickness (the aim: within 5 mm), and
the overhang's drop, how far the vertices that started more than 0.1 m past the edge lie below those
over the middle (the medians' difference; hanging straight down they drop by their distance past the
edge): a shape sunk or tilted as a whole does not count as draped. Then what the model could
reach: the reference's shape at 2 s fitted (``fitting.fit_pose``, chamfer-L1 with the rigid pose free)
with the solver's own coordinates inside its wall (``neural.wall_radius``: what any rollout can reach),
with the same coordinates free, and with the network's full latent (what the model represents), each
fit's chamfer (over the bounding-box diagonal) and overhang's drop. A chamfer fit matches points
without their correspondence, so it may crumple or stretch the sheet: each row gives its edges'
strain (the 95th percentile of |length / rest length - 1|), and more rows settle the sheet instead,
from flat on the table, to the least of the energy (``settle``)

    E = sum_i m_i g z_i + 1/2 omega^2 sum_i m_i |u_i|^2 + 1/2 k_s M mean_e (l_e / L_e - 1)^2
        + 1/2 k_c sum_i m_i d_i^2  (+ the solver's wall on its coordinates)

over the vertices' equal masses m_i (the sheet's mass M): gravity, the category's springs back to the
rest shape (omega its frequency, u_i a vertex's displacement in the body's frame less the mean), a
membrane term that holds the edges near their rest lengths as cloth's stretch stiffness does
(STRETCH_STIFFNESS k_s), and the table's top pushing up on the vertices over it (depth d_i, the
engine's contact stiffness k_c): in the solver's coordinates, in the network's full latent and, with
``--directions``, on the network's k leading active directions. Weights without calibrated materials
run with the shipped ones. Writes benchmarks/results/drape.{json,md}.
"""

import argparse
from pathlib import Path

import numpy as np
import torch

from benchmarks import write_results
from benchmarks.deformation import with_materials
from benchmarks.scene_pictures import sheet
from neurok_blender.core import Collider, Conditions, NeuROK, simulate
from neurok_blender.core.checkpoint import read_checkpoint
from neurok_blender.core.dynamics import Environment
from neurok_blender.core.fitting import fit_pose, latent_decoder
from neurok_blender.core.mesh import box_mesh
from neurok_blender.core.model import prepare_shape, shape_tensors
from neurok_blender.core.reduction import active_subspace
from neurok_blender.core.rotation import exp_so3
from neurok_blender.core.trajectory import OUTPUT
from training.evaluation import edge_strain, mesh_edges

TABLE, TOP, THICKNESS = 0.6, 0.5, 0.01  # m: the table's side, its top's height, the collider's thickness
FRAMES, FPS = 49, 24
FIT_STEPS = 400
# J/kg per squared strain, over the edges' mean: settled in the network's full latent, the sheet's
# edges then strain 2.4 % at the 95th percentile (Blender Cloth's on the table: 1.8 %), 68 % without it
STRETCH_STIFFNESS = 1e3
SETTLE_ROUNDS = 20  # of L-BFGS, 40 evaluations each at most; they stop when the energy stays put


def scene():
    """The sheet (vertices, faces), the table (vertices, faces) and the run's conditions."""
    v, f = sheet(1.0, 0.7)
    table = box_mesh((TABLE, TABLE, TOP), (-TABLE / 2, -TABLE / 2, 0.0))
    conditions = Conditions(frames=FRAMES, fps=FPS, ground_height=0.0, category="cloth",
                            colliders=[Collider(*table, friction=0.6, thickness=THICKNESS, name="table")])
    return v, f, table, conditions


def regions(rest):
    """Masks of the vertices over the table's middle and of those more than 0.1 m past its edge."""
    reach = np.abs(rest[:, :2]).max(1)
    return reach < TABLE / 2 - 0.05, reach > TABLE / 2 + 0.1


def measured(rest, last, faces) -> dict:
    """The top's sag, the overhang's drop (m) and the edges' strain of the shape ``last``."""
    middle, overhang = regions(rest)
    return {"top_sag_m": float(max(0.0, TOP + THICKNESS - last[middle, 2].min())),
            "overhang_drop_m": float(np.median(last[middle, 2]) - np.median(last[overhang, 2])),
            "strain": edge_strain(rest, last, faces)}


def settle(decode, start, rest, faces, mass: float, omega2: float, gravity: float, support, wall=None,
           turn=(0.0, 0.0, 0.0)):
    """The least of the module docstring's E over the coordinates c (from ``start``) and the rigid
    pose, by L-BFGS: ``decode(c)`` (V, 3) is the shape in the body's frame (``rest`` at ``start``),
    ``omega2`` the springs' omega^2 (s^-2), ``gravity`` g (m/s^2), ``support(x)`` the energy (J) of what
    holds the sheet at the world positions x (V, 3), ``wall(c)`` the solver's wall energy, if any. The
    pose turns about the shape's centroid, starting turned by the rotation vector ``turn`` and moved so
    that the centroid stays put. Returns (the settled vertices (V, 3), the coordinates' norm)."""
    rest = torch.as_tensor(rest, dtype=torch.float64)
    a, b = torch.as_tensor(mesh_edges(faces)).T
    lengths = (rest[a] - rest[b]).norm(dim=1)
    m = mass / len(rest)
    c = start.detach().clone().requires_grad_(True)
    rotation = torch.tensor(turn, dtype=torch.float64, requires_grad=True)
    translation = torch.zeros(3, dtype=torch.float64, requires_grad=True)

    def energy():
        y = decode(c).to(torch.float64)
        middle = y.mean(0)
        x = (y - middle) @ exp_so3(rotation).T + middle + translation
        u = y - rest
        u = u - u.mean(0)
        stretch = (y[a] - y[b]).norm(dim=1) / lengths - 1.0
        total = m * (gravity * x[:, 2].sum() + 0.5 * omega2 * (u * u).sum()) \
            + 0.5 * STRETCH_STIFFNESS * mass * (stretch * stretch).mean() + support(x)
        return total + (0.0 if wall is None else wall(c)), x

    optimizer = torch.optim.LBFGS([c, rotation, translation], max_iter=40, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        total = energy()[0]
        total.backward()
        return total

    last = None
    with torch.enable_grad():
        for _ in range(SETTLE_ROUNDS):
            now = float(optimizer.step(closure).detach())
            if last is not None and abs(last - now) <= 1e-9 * abs(now):
                break
            last = now
    with torch.no_grad():
        return energy()[1].numpy(), float(c.norm())


def table_top(mass: float, count: int):
    """The table's top pushing up on the vertices over it: 1/2 k_c sum_i m_i d_i^2 (J) at depth d_i."""
    def support(x):
        inside = (x[:, :2].abs().max(1).values < TABLE / 2).to(x.dtype)
        depth = torch.clamp(TOP + THICKNESS - x[:, 2], min=0.0) * inside
        return 0.5 * mass / count * Environment.contact_stiffness * (depth * depth).sum()
    return support


def reference(v, f, table) -> np.ndarray:
    """Blender Cloth's sheet at 2 s (V, 3)."""
    from training.reference.cloth import simulate_cloth

    run = simulate_cloth(v, f, conditions=Conditions(frames=FRAMES, fps=FPS, ground_height=0.0), colliders=[table])
    return run.positions[-1].astype(np.float64)


def decoders(neurok: NeuROK, v, f, conditions):
    """The sheet's map (category cloth) and its shapes in the body's frame (V, 3, world; ``v`` at
    c = 0) as functions of coordinates c: ``"solver"`` of the solver's reduced coordinates,
    ``"network"`` of the network's full latent (c = z - mu_cond), and ``leading(k)`` the network on its
    k leading active directions (``reduction.active_subspace``, the solver's choice before its mass and
    mirror blocks), each with its rest coordinates. Returns (kmap, the prepared shape, the shapes,
    leading)."""
    shape = prepare_shape(v, f, neurok.model.config)
    kmap, _ = neurok.body(v, f, conditions, "cloth")
    kmap.attach(OUTPUT, torch.as_tensor(v)[None], output=True)
    with torch.no_grad():
        features, query_features, queries = shape_tensors(neurok.model, shape)
        prior_mean, tokens = neurok.model.prior(features)
    network = latent_decoder(neurok.model, prior_mean, tokens, query_features, queries,
                             torch.as_tensor(shape.vertices, dtype=torch.float32), shape.skin)
    with torch.no_grad():
        at_rest = network(torch.zeros_like(prior_mean)).to(torch.float64)
    shapes = {
        "solver": (lambda s: kmap.deformed(s[None], OUTPUT)[0], torch.zeros(kmap.reduced_size, dtype=torch.float64)),
        "network": (lambda z: torch.as_tensor(v) + shape.scale * (network(z.to(torch.float32)).to(torch.float64) - at_rest),
                    torch.zeros(prior_mean.shape, dtype=torch.float64))}

    def leading(k: int):
        basis = active_subspace(neurok.model, prior_mean, tokens, query_features, coordinates=k).basis
        return (lambda s: shapes["network"][0](torch.einsum("i,ilc->lc", s.to(basis.dtype), basis)),
                torch.zeros(k, dtype=torch.float64))

    return kmap, shape, shapes, leading


def reach(neurok: NeuROK, v, f, conditions, target, directions=()) -> list[dict]:
    """The fits of ``target`` (V, 3, world) and the settled sheets described above, each with its
    measures; with ``directions``, the network settled on that many leading directions of its active
    subspace too."""
    kmap, shape, shapes, leading = decoders(neurok, v, f, conditions)
    goal = torch.as_tensor(shape.to_model(target), dtype=torch.float32)
    center = torch.as_tensor(shape.center)
    in_model_units = {name: (lambda c, d=decode: ((d(c) - center) / shape.scale).float())
                      for name, (decode, _) in shapes.items()}
    k, radius = kmap.reduced_size, kmap.wall_radius
    fits = {f"solver's {k} coordinates, inside the wall ({radius:.1f})": ("solver", radius),
            f"solver's {k} coordinates, free": ("solver", None),
            f"network's full latent ({shapes['network'][1].numel()}), free": ("network", None)}
    rows = []
    for name, (decoder, bound) in fits.items():
        start = shapes[decoder][1].to(torch.float32 if decoder == "network" else torch.float64)
        fit = fit_pose(in_model_units[decoder], start, goal, radius=bound, steps=FIT_STEPS)
        rows.append({"run": f"fit: {name}", "chamfer": fit.chamfer, "latent_norm": float(fit.coordinates.norm()),
                     **measured(v, shape.to_world(fit.points.numpy().astype(np.float64)), f)})
    above = torch.tensor([0.0, 0.0, v[:, 2].min() - TOP - THICKNESS], dtype=torch.float64)  # the start's height
    lying = v - above.numpy()
    support = table_top(conditions.mass, len(v))
    for name, (decode, start, wall) in settled_ways(kmap, shapes, leading, directions).items():
        sheet, norm = settle(lambda c, d=decode: d(c) - above, start, lying, f, conditions.mass, kmap.omega2,
                             float(np.linalg.norm(conditions.gravity)), support, wall)
        rows.append({"run": f"settled: {name}", "latent_norm": norm, **measured(lying, sheet, f)})
    return rows


def settled_ways(kmap, shapes, leading, directions) -> dict:
    """name -> (decode, start, wall energy or None): the solver's coordinates with its wall, the
    network's full latent, and the network on each of ``directions`` leading directions."""
    ways = {f"solver's {kmap.reduced_size} coordinates, its wall":
            (*shapes["solver"], lambda s: 0.5 * kmap.omega2 * kmap.wall(s[None])[0]),
            f"network's full latent ({shapes['network'][1].numel()})": (*shapes["network"], None)}
    for k in directions:
        ways[f"network on its {k} leading directions"] = (*leading(k), None)
    return ways


def evaluate(weights: list[str], directions=()) -> list[dict]:
    v, f, table, conditions = scene()
    target = reference(v, f, table)
    rows = [{"weights": "", "run": "reference (Blender Cloth)", **measured(v, target, f)}]
    print(rows[-1], flush=True)
    shipped = NeuROK.load()
    for w in weights:
        neurok = shipped if w == "shipped" else with_materials(Path(w), shipped.materials)
        label = w if w == "shipped" else f"{w} (step {read_checkpoint(w)['about']['steps']})"
        result = simulate(v, f, conditions, model=neurok)
        rows.append({"weights": label, "run": "rollout", "finite": bool(np.isfinite(result.positions).all()),
                     **measured(v, result.positions[-1].astype(np.float64), f)})
        print(rows[-1], flush=True)
        for row in reach(neurok, v, f, conditions, target, directions):
            rows.append({"weights": label, **row})
            print(rows[-1], flush=True)
    return rows


def markdown(rows) -> str:
    lines = ["| weights | run | top's sag | overhang's drop | edges' strain (95th percentile) "
             "| chamfer (of the diagonal) | \\|s\\| |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        chamfer = f"{r['chamfer']:.4f}" if "chamfer" in r else ""
        norm = f"{r['latent_norm']:.1f}" if "latent_norm" in r else ""
        lines.append(f"| {r['weights']} | {r['run']} | {1000 * r['top_sag_m']:.1f} mm | "
                     f"{1000 * r['overhang_drop_m']:.0f} mm | {100 * r['strain']:.1f} % | {chamfer} | {norm} |")
    return "\n".join(lines)


def command_line(doc: str, name: str, evaluate, markdown) -> None:
    """The command line of the sheet benchmarks: ``evaluate(weights, directions)`` rows, written as ``name``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--weights", nargs="+", default=["shipped"], help="checkpoints, or 'shipped'")
    parser.add_argument("--directions", nargs="*", type=int, default=[],
                        help="settle the network on these numbers of its leading active directions too")
    a = parser.parse_args()
    torch.set_num_threads(1)
    rows = evaluate(a.weights, a.directions)
    text = markdown(rows)
    print(text)
    write_results(name, text, rows=rows)


def main():
    command_line(__doc__, "drape", evaluate, markdown)


if __name__ == "__main__":
    main()
