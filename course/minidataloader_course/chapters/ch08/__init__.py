"""Chapter 8: its checks, solution, demos."""
