"""Shapes from the pybullet wheel's data folder (zlib): 1 000 random blobs to train on, named objects held out.

Each ``random_urdfs`` blob is a set of convex parts that touch or overlap. Each blob is fused into one
closed surface with wildmeshing. TetWild gives a different result on each run, so the fusing is done once,
by ``python -m training.shapes.library CACHE``, and the corpus reads the cache (``fused_blob``,
``named_object``). Blobs with index % 10 == 0 are held out. The named everyday objects (bunny, duck,
...) form the public held-out set and are never used in training. Every shape in the cache is centred
on its bounding box, with its largest side ``EXTENT`` long.
"""

import argparse
import json
import multiprocessing
import multiprocessing.connection
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from neurok_blender.core.mesh import is_closed, loose_parts, signed_volume, triangle_areas

from .geometry import surface_distance
from .tetra import tet_volumes, tetwild_quietly

EXTENT = 0.5  # m: largest bounding-box side, the middle of the superquadrics' 0.2-0.8 m
HELDOUT_EVERY = 10  # blob indices divisible by this are held out
# (grow, envelope) tried in turn. Each convex part is scaled up about its centroid by ``grow`` so that
# parts which only touch come to overlap: unscaled, 9 of blobs 10-49 fell apart into sizeable pieces;
# scaled by 1 %, 1 of them did; by 3 %, none of blobs 0-9.
# The envelope (TetWild's epsilon, relative to the bounding-box diagonal) sets how coarse the surface
# may get: 0.001 gave 230-1 800 surface vertices, 0.003 gave 80-640.
ATTEMPTS = ((0.03, 0.003), (0.06, 0.006))
EDGE_LENGTH = 0.13  # TetWild's target tet edge, relative to the bounding-box diagonal
MIN_VERTICES, MAX_VERTICES = 400, 800  # coarser fused surfaces get their longest edges split up to the minimum
SPLIT_RATIO = 0.75  # one round of refinement splits edges at least this fraction of the longest
# Fused vertices farther than this (relative to the diagonal) from the input mean TetWild made shape up:
# measured 0.000-0.084 on good fusions, about 0.3 on a tetrahedron it once returned for a thin stick (blob 178).
MAX_REACH = 0.1
JOB_TIMEOUT = 1200  # s: a shape still fusing after this is recorded as failed (the slowest took 85 s CPU)
SMALL_PART = 0.01  # fused pieces with less than this share of the volume (slivers, crumbs, voids) are dropped

# The held-out objects and the file each is built from, relative to the data folder. Left out: the lego
# brick (a hollow shell that stays over MAX_VERTICES up to envelope 0.01 and turns jagged at 0.015),
# cube.obj, stone.obj and toys/cube.obj (plain boxes, like jenga and domino), robots and scenery.
NAMED_FILES = {
    "bunny": "bunny.obj",
    "duck": "duck.obj",
    "teddy": "teddy2_VHACD_CHs.obj",  # the only teddy mesh: 15 convex hulls (V-HACD)
    "mug": "objects/mug_col.obj",  # mug.obj is an open shell; its collision hulls have volume
    "soccerball": "soccerball.obj",
    "sphere": "sphere_smooth.obj",
    "torus": "torus/torus_textured.obj",
    "jenga": "jenga/jenga.obj",
    "domino": "domino/domino.obj",
    "shape_sorter": "toys/shape_sorter.obj",
    "concave_box": "toys/concave_box.obj",
    "cylinder": "toys/cylinder.obj",
    "prism": "toys/prism.obj",
}
HELDOUT_OBJECTS = tuple(NAMED_FILES)


class FusionError(ValueError):
    """A shape that did not become one closed surface; the message says why."""


def data_path() -> Path:
    import pybullet_data

    return Path(pybullet_data.getDataPath())


def blob_file(index: int) -> Path:
    return data_path() / "random_urdfs" / f"{index:03d}" / f"{index:03d}.obj"


def all_blobs() -> list[int]:
    return sorted(int(p.name) for p in (data_path() / "random_urdfs").iterdir() if p.name.isdigit())


def blob_indices(split: str, cache: Path | None = None) -> list[int]:
    """Blob indices of ``split`` ("train" or "heldout", by index % HELDOUT_EVERY); with a cache, only
    those that fused."""
    if split not in ("train", "heldout"):
        raise ValueError(f"unknown split {split!r}")
    indices = [i for i in all_blobs() if (i % HELDOUT_EVERY == 0) == (split == "heldout")]
    if cache is None:
        return indices
    fused = _manifest(Path(cache))["blobs"]
    return [i for i in indices if fused.get(str(i), {}).get("ok")]


def read_obj(path) -> tuple[np.ndarray, np.ndarray]:
    """Positions (V, 3) and triangles (F, 3) of a Wavefront OBJ, every object and group together.

    Polygons become triangle fans. Face corners may be ``v``, ``v/vt``, ``v//vn`` or ``v/vt/vn``, and
    negative indices count back from the last vertex read so far.
    """
    vertices, triangles = [], []
    with open(path) as file:
        for line in file:
            words = line.split()
            if not words:
                continue
            if words[0] == "v":
                vertices.append([float(x) for x in words[1:4]])
            elif words[0] == "f":
                corners = [int(w.split("/")[0]) for w in words[1:]]
                corners = [c - 1 if c > 0 else len(vertices) + c for c in corners]
                triangles += [[corners[0], corners[k], corners[k + 1]] for k in range(1, len(corners) - 1)]
    vertices = np.array(vertices, dtype=np.float64).reshape(-1, 3)
    triangles = np.array(triangles, dtype=np.int64).reshape(-1, 3)
    if len(triangles) and (triangles.min() < 0 or triangles.max() >= len(vertices)):
        raise ValueError(f"{path}: a face refers to a vertex that does not exist")
    return vertices, triangles


def fuse(vertices, faces, grow: float, envelope: float) -> tuple[np.ndarray, np.ndarray, dict]:
    """One closed, manifold, outward surface around the union of the mesh's loose parts.

    Each part is scaled by 1 + ``grow`` about its centroid, TetWild fills the union (tets whose winding
    number exceeds 1/2) and the surface is the tets' boundary, its pinch points pulled apart. Pieces
    smaller than SMALL_PART of the volume are dropped. Raises FusionError if the rest is not one good
    surface, or strays more than MAX_REACH from the input.
    """
    vertices = np.asarray(vertices, dtype=np.float64)
    faces = np.asarray(faces, dtype=np.int64)
    if len(faces) == 0:
        raise FusionError("no faces")
    parts = loose_parts(faces, len(vertices))
    counts = np.bincount(parts)
    centroids = np.stack([np.bincount(parts, vertices[:, k]) for k in range(3)], 1) / counts[:, None]
    grown = centroids[parts] + (1 + grow) * (vertices - centroids[parts])
    points, tets = _tetwild(grown, faces, envelope)
    if len(tets) == 0:
        raise FusionError("nothing inside")
    surface, triangles, unpinched = _unpinched(*boundary_surface(points, tets))
    surface, triangles, dropped = _without_small_pieces(surface, triangles)
    problem = surface_problem(surface, triangles)
    if problem:
        raise FusionError(problem)
    reach = float(surface_distance(surface, grown, faces, chunk=64).max() / np.linalg.norm(np.ptp(grown, axis=0)))
    if reach > MAX_REACH:
        raise FusionError(f"a vertex {reach:.2f} of the diagonal away from the input")
    return surface, triangles, {"parts": int(len(counts)), "unpinched": unpinched, "dropped_pieces": dropped,
                                "reach": reach}


def boundary_surface(points: np.ndarray, tets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Triangles that belong to one tet only, facing out of it (tets positively oriented), and their vertices."""
    a, b, c, d = tets.T
    faces = np.concatenate([np.stack(f, 1) for f in ((a, c, b), (a, b, d), (a, d, c), (b, c, d))])
    _, inverse, counts = np.unique(np.sort(faces, axis=1), axis=0, return_inverse=True, return_counts=True)
    return _compacted(points, faces[counts[inverse.ravel()] == 1])


def surface_problem(vertices: np.ndarray, faces: np.ndarray) -> str | None:
    """Why the triangles are not one closed, manifold, outward-facing surface enclosing volume; None if they are."""
    if not is_closed(faces):
        return "not closed"
    directed = faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)
    if len(np.unique(directed, axis=0)) < len(directed):
        return "not consistently oriented"
    pieces = int(loose_parts(faces, len(vertices)).max()) + 1
    if pieces > 1:
        return f"{pieces} separate pieces"
    pinched = _corner_fans(faces, len(vertices)).max() + 1 - len(np.unique(faces))
    if pinched:
        return f"{pinched} non-manifold vertices"
    if triangle_areas(vertices, faces).min() <= 1e-10 * np.ptp(vertices, axis=0).max() ** 2:
        return "degenerate triangles"
    if signed_volume(vertices, faces) <= 0:
        return "faces inwards"
    return None


def refined(vertices: np.ndarray, faces: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The same closed surface with ``count`` vertices (if it had fewer): the longest edges are split at
    their midpoints, in rounds that split no two edges of one triangle."""
    vertices, faces = vertices.copy(), faces.copy()
    while len(vertices) < count:
        edges = np.sort(faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
        unique, inverse = np.unique(edges, axis=0, return_inverse=True)
        length = np.linalg.norm(vertices[unique[:, 0]] - vertices[unique[:, 1]], axis=1)
        corners = np.argsort(inverse.ravel(), kind="stable").reshape(-1, 2)  # the two face slots of each edge
        taken = np.zeros(len(faces), dtype=bool)
        chosen = []
        for edge in np.argsort(-length, kind="stable"):
            if length[edge] < SPLIT_RATIO * length.max() or len(vertices) + len(chosen) == count:
                break
            owners = corners[edge] // 3
            if not taken[owners].any():
                taken[owners] = True
                chosen.append(edge)
        chosen = np.array(chosen)
        middle = len(vertices) + np.arange(len(chosen))
        vertices = np.concatenate([vertices, vertices[unique[chosen]].mean(1)])
        slots = corners[chosen].ravel()
        face, k = slots // 3, slots % 3
        new = np.repeat(middle, 2)
        p, q, r = faces[face, k], faces[face, (k + 1) % 3], faces[face, (k + 2) % 3]
        faces[face] = np.stack([p, new, r], 1)  # the edge p -> q of this face becomes p -> m -> q
        faces = np.concatenate([faces, np.stack([new, q, r], 1)])
    return vertices, faces


def normalized(vertices: np.ndarray) -> np.ndarray:
    """Centred on the bounding box, the largest side EXTENT long."""
    low, high = vertices.min(0), vertices.max(0)
    return (vertices - (low + high) / 2) * (EXTENT / (high - low).max())


def prepared(vertices, faces) -> tuple[np.ndarray, np.ndarray, dict]:
    """Fused, refined and normalized, trying ATTEMPTS in turn; raises FusionError with every reason."""
    reasons = []
    for attempt, (grow, envelope) in enumerate(ATTEMPTS):
        try:
            surface, triangles, record = fuse(vertices, faces, grow, envelope)
        except FusionError as error:
            reasons.append(str(error))
            continue
        if len(surface) > MAX_VERTICES:
            reasons.append(f"{len(surface)} vertices")
            continue
        record.update(attempt=attempt, fused_vertices=len(surface))
        surface, triangles = refined(surface, triangles, MIN_VERTICES)
        euler = len(surface) - len(triangles) // 2  # V - E + F with E = 3F / 2
        return normalized(surface), triangles, {**record, "genus": (2 - euler) // 2}
    raise FusionError("; ".join(reasons))


def fused_blob(index: int, cache) -> tuple[np.ndarray, np.ndarray]:
    """Blob ``index`` as fused by the preprocessing: vertices (V, 3) float64 and triangles (F, 3) int64."""
    return _cached(Path(cache), "blobs", str(index))


def named_object(name: str, cache) -> tuple[np.ndarray, np.ndarray]:
    """The held-out object ``name`` (one of HELDOUT_OBJECTS) as repaired and normalized by the preprocessing."""
    if name not in NAMED_FILES:
        raise ValueError(f"unknown object {name!r}; the named objects are {', '.join(HELDOUT_OBJECTS)}")
    return _cached(Path(cache), "named", name)


def preprocess(cache, blobs=None, names=HELDOUT_OBJECTS, workers: int = 2, retry_failed: bool = False) -> dict:
    """Fuse blobs (default: all) and named objects into ``cache`` (npz files and manifest.json).

    Resumable: what the manifest records is not redone, failures included unless ``retry_failed``
    (TetWild differs from run to run, so a retry may succeed). The manifest is rewritten after every
    shape, and refuses to mix with other fusion settings.
    """
    cache = Path(cache)
    manifest = _manifest(cache)
    if manifest["settings"] != _settings():
        raise ValueError(f"{cache} was fused with other settings {manifest['settings']}; use a new folder")
    blobs = all_blobs() if blobs is None else blobs
    jobs = [("named", n, NAMED_FILES[n]) for n in names]
    jobs += [("blobs", str(i), str(blob_file(i).relative_to(data_path()))) for i in blobs]
    jobs = [(kind, key, source) for kind, key, source in jobs
            if key not in manifest[kind] or (retry_failed and not manifest[kind][key]["ok"])]
    tasks = [(cache, *job) for job in jobs]
    for kind, key, record in (_in_processes(tasks, workers) if workers > 1 else map(_prepare_job, tasks)):
        manifest[kind][key] = record
        _write_manifest(cache, manifest)
        print(f"{kind} {key}: {record.get('reason') or record['vertices']} ({record['seconds']:.1f} s)", flush=True)
    return manifest


def _in_processes(tasks, workers):
    """``_prepare_job`` results, each job in a process of its own, ``workers`` at a time: TetWild has
    segfaulted here (a pool then waits forever for the lost job) and might hang, so a process that
    dies or overruns JOB_TIMEOUT is recorded as a failure."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["wildmeshing", "training.shapes.geometry", "training.shapes.tetra"])  # loaded once
    waiting, running = list(reversed(tasks)), {}
    while waiting or running:
        while waiting and len(running) < workers:
            task = waiting.pop()
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(target=_job_process, args=(task, sender), daemon=True)
            process.start()
            sender.close()
            running[process.sentinel] = (process, receiver, task, time.monotonic())
        multiprocessing.connection.wait(list(running), timeout=10)
        for sentinel, (process, receiver, task, began) in list(running.items()):
            overrun = time.monotonic() - began > JOB_TIMEOUT
            if process.is_alive() and not overrun:
                continue
            del running[sentinel]
            if process.is_alive():
                process.kill()
            process.join()
            try:
                result = receiver.recv()
            except EOFError:  # it ended without sending
                _, kind, key, source = task
                reason = "timed out" if overrun else f"the fusing process died (exit code {process.exitcode})"
                result = kind, key, {"source": source, "ok": False, "reason": reason,
                                     "seconds": time.monotonic() - began}
            yield result


def _job_process(task, sender):
    sender.send(_prepare_job(task))
    sender.close()


def _prepare_job(task) -> tuple[str, str, dict]:
    cache, kind, key, source = task
    began, cpu = time.perf_counter(), time.process_time()  # CPU time: one core, whatever else runs here
    vertices, faces = read_obj(data_path() / source)
    record = {"source": source, "raw_vertices": len(vertices), "raw_closed": bool(len(faces)) and is_closed(faces)}
    try:
        surface, triangles, details = prepared(vertices, faces)
    except FusionError as error:
        return kind, key, {**record, "ok": False, "reason": str(error), "seconds": time.perf_counter() - began,
                           "cpu_seconds": time.process_time() - cpu}
    path = cache / kind / f"{key}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as partial:
        np.savez_compressed(partial, vertices=surface, faces=triangles.astype(np.int32))
    os.replace(partial.name, path)
    return kind, key, {**record, **details, "ok": True, "vertices": len(surface), "faces": len(triangles),
                       "seconds": time.perf_counter() - began, "cpu_seconds": time.process_time() - cpu}


def _cached(cache: Path, kind: str, key: str):
    record = _manifest(cache)[kind].get(key)
    if record is None:
        raise KeyError(f"{kind} {key} is not in {cache}; run python -m training.shapes.library {cache}")
    if not record["ok"]:
        raise FusionError(f"{kind} {key} did not fuse: {record['reason']}")
    with np.load(cache / kind / f"{key}.npz") as stored:
        return stored["vertices"], stored["faces"].astype(np.int64)


def _settings() -> dict:
    """The fusion settings as the manifest stores them (JSON turns tuples into lists)."""
    return json.loads(json.dumps({"attempts": ATTEMPTS, "edge_length": EDGE_LENGTH, "extent": EXTENT,
                                  "vertices": [MIN_VERTICES, MAX_VERTICES], "split_ratio": SPLIT_RATIO,
                                  "small_part": SMALL_PART, "max_reach": MAX_REACH}))


def _manifest(cache: Path) -> dict:
    path = cache / "manifest.json"
    if path.exists():
        return json.loads(path.read_text())
    return {"settings": _settings(), "blobs": {}, "named": {}}


def _write_manifest(cache: Path, manifest: dict):
    cache.mkdir(parents=True, exist_ok=True)
    partial = cache / "manifest.json.partial"
    partial.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(partial, cache / "manifest.json")


def _tetwild(vertices, faces, envelope):
    """Positively oriented tets filling the inside of the triangles (winding number above 1/2)."""
    import wildmeshing

    with tetwild_quietly():
        tet = wildmeshing.Tetrahedralizer(edge_length_r=EDGE_LENGTH, epsilon=envelope, max_threads=1)
        tet.set_log_level(6)
        tet.set_mesh(vertices, faces.astype(np.int32))
        tet.tetrahedralize()
        points, tets = tet.get_tet_mesh(manifold_surface=True)[:2]
    tets = tets.astype(np.int64)
    flip = tet_volumes(points, tets) < 0
    tets[flip] = tets[flip][:, [0, 2, 1, 3]]
    return points, tets


def _compacted(vertices, faces):
    used = np.unique(faces)
    remap = np.full(len(vertices), -1)
    remap[used] = np.arange(len(used))
    return vertices[used], remap[faces]


def _unpinched(vertices, faces):
    """Where surfaces touch at a vertex, each fan of triangles gets its own copy of it, moved a tenth of
    the way to the fan's edge midpoints so the copies no longer touch; also how many copies were added."""
    fans = _corner_fans(faces, len(vertices))
    owner = np.empty(fans.max() + 1, dtype=np.int64)
    owner[fans] = faces.ravel()
    copies = vertices[owner]
    pinched = np.bincount(owner, minlength=len(vertices))[owner] > 1
    opposite = (vertices[faces[:, [1, 2, 0]]] + vertices[faces[:, [2, 0, 1]]]).reshape(-1, 3) / 2
    middle = np.stack([np.bincount(fans, opposite[:, k]) for k in range(3)], 1) / np.bincount(fans)[:, None]
    copies[pinched] += 0.1 * (middle[pinched] - copies[pinched])
    return copies, fans.reshape(-1, 3), int(len(copies) - len(np.unique(faces)))


def _without_small_pieces(vertices, faces):
    """The surface without pieces under SMALL_PART of its volume (inner voids count negative), and how
    many were dropped."""
    pieces = loose_parts(faces, len(vertices))[faces[:, 0]]
    volumes = np.array([signed_volume(vertices, faces[pieces == p]) for p in range(pieces.max() + 1)])
    keep = volumes >= SMALL_PART * volumes.sum()
    return *_compacted(vertices, faces[keep[pieces]]), int((~keep).sum())


def _corner_fans(faces: np.ndarray, vertex_count: int) -> np.ndarray:
    """Fan label of every triangle corner (in ``faces.ravel()`` order). Corners at one vertex share a label
    when their triangles are joined by edges around it: one fan at a manifold vertex, several where
    surfaces touch at a point."""
    corner_vertex = faces.ravel()
    outgoing = faces[:, [1, 2, 0]].ravel()  # each corner's edge leaves its vertex for the next one
    keys = corner_vertex * vertex_count + outgoing
    order = np.argsort(keys)
    back = outgoing * vertex_count + corner_vertex
    found = np.minimum(np.searchsorted(keys[order], back), len(keys) - 1)
    twin = np.where(keys[order][found] == back, order[found], -1)  # the same edge, walked the other way
    neighbour = twin - twin % 3 + (twin + 1) % 3  # the twin triangle's corner at the same vertex
    corners = np.arange(len(keys))
    neighbour = np.where(twin >= 0, neighbour, corners)
    return loose_parts(np.stack([corners, neighbour, neighbour], 1), len(keys))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path, help="folder for the fused surfaces and manifest.json")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--blobs", type=int, nargs="*", help="blob indices (default: all)")
    parser.add_argument("--retry-failed", action="store_true", help="fuse again what failed before")
    args = parser.parse_args(argv)
    manifest = preprocess(args.cache, args.blobs, workers=args.workers, retry_failed=args.retry_failed)
    for kind in ("blobs", "named"):
        records = manifest[kind].values()
        print(f"{kind}: {sum(r['ok'] for r in records)} fused, {sum(not r['ok'] for r in records)} failed")


if __name__ == "__main__":
    sys.exit(main())
