print("meshctl: not yet implemented")
