"""Small helpers shared by the package's parts."""
