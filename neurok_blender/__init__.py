"""NeuROK for Blender: neural reduced-order physics baked to shape keys."""
