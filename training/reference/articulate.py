"""Reading a bare mesh as an articulated object: loose parts, hinged where they touch along a line.

Two parts touch where points of one (its vertices and area-uniform samples) lie within a tolerance
of the other's surface. A contact region that is a line (at most 3 tolerances wide, at least 10
long, measured as standard deviations across and along it) is a hinge with that axis through the
region's centre; a patch or a point is ambiguous and refused, as is a contact graph with a loop or a part touching nothing. The
hinge's range is swept (``free_range``) until the parts would overlap.
"""

import numpy as np

from neurok_blender.core.mesh import loose_parts
from training.shapes.articulated import SWEEP_SAMPLES, ArticulatedObject, Joint, free_range
from training.shapes.geometry import surface_distance, surface_samples

LINE_WIDTH, LINE_LENGTH = 3.0, 10.0  # in tolerances


def articulate(vertices: np.ndarray, faces: np.ndarray, tolerance: float | None = None):
    """An ArticulatedObject of the mesh's loose parts (the one with most vertices first) and, for every input vertex, its
    row in the object's ``mesh()`` vertices. Raises ValueError saying what makes the reading ambiguous."""
    labels = loose_parts(faces, len(vertices))
    count = labels.max() + 1
    if count < 2:
        raise ValueError("the mesh is one connected piece: an articulated object needs loose parts that touch")
    tolerance = tolerance or 1e-3 * float(np.linalg.norm(np.ptp(vertices, axis=0)))
    parts, members = [], []
    for k in range(count):
        index = np.nonzero(labels == k)[0]
        remap = np.full(len(vertices), -1)
        remap[index] = np.arange(len(index))
        parts.append((vertices[index], remap[faces[labels[faces[:, 0]] == k]]))
        members.append(index)

    samples = [surface_samples(v, f, SWEEP_SAMPLES) for v, f in parts]
    contacts = {}
    for i in range(count):
        for j in range(i + 1, count):
            region = np.concatenate([_near(samples[i], parts[j], tolerance), _near(samples[j], parts[i], tolerance)])
            if len(region):
                contacts[i, j] = region
    order, parent = _spanning_tree(count, contacts, sizes=[len(v) for v, _ in parts])

    joints = []
    for child in order[1:]:
        i, j = sorted((parent[child], child))
        anchor, axis = _hinge_line(contacts[i, j], i, j, tolerance)
        limits = free_range(parts[parent[child]], samples[parent[child]], parts[child], samples[child],
                            anchor, axis, tolerance)
        joints.append(Joint(parent[child], child, "hinge", anchor, axis, limits))
    root_first = ArticulatedObject("articulated", [parts[k] for k in order], _renumber(joints, order))
    rows = np.empty(len(vertices), dtype=np.int64)
    rows[np.concatenate([members[k] for k in order])] = np.arange(len(vertices))
    return root_first, rows


def _near(points, other, tolerance):
    return points[surface_distance(points, *other) <= tolerance]


def _spanning_tree(count, contacts, sizes):
    """Breadth-first from the largest part; the contacts must form a tree (no loops, nothing alone)."""
    if len(contacts) != count - 1:
        if len(contacts) < count - 1:
            raise ValueError(f"{count} loose parts but only {len(contacts)} touching pairs: some part touches nothing")
        raise ValueError(f"{count} loose parts touch in {len(contacts)} pairs, a loop: which joints move is ambiguous")
    neighbours = {k: [] for k in range(count)}
    for i, j in contacts:
        neighbours[i].append(j)
        neighbours[j].append(i)
    root = int(np.argmax(sizes))
    order, parent, queue = [root], {root: None}, [root]
    while queue:
        current = queue.pop(0)
        for n in neighbours[current]:
            if n not in parent:
                parent[n] = current
                order.append(n)
                queue.append(n)
    if len(order) != count:
        raise ValueError("some loose parts are not connected to the others by contacts")
    return order, parent


def _hinge_line(region, i, j, tolerance):
    center = region.mean(0)
    values, vectors = np.linalg.eigh(np.cov((region - center).T) if len(region) > 1 else np.zeros((3, 3)))
    width, length = np.sqrt(np.clip(values[1:], 0, None))
    if width > LINE_WIDTH * tolerance or length < LINE_LENGTH * tolerance:
        raise ValueError(f"parts {i} and {j} touch over a patch or a point, not along a line: no hinge axis")
    return center, vectors[:, 2]


def _renumber(joints, order):
    position = {part: n for n, part in enumerate(order)}
    return [Joint(position[j.parent], position[j.child], j.kind, j.anchor, j.axis, j.limits) for j in joints]
