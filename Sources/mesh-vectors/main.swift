print("mesh-vectors: not yet implemented")
