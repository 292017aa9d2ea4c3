"""The 4D training corpus: sequences of meshes with fixed topology, in compressed shards."""
