print("meshd: not yet implemented")
