"""Chapter 11: its checks, solution, demos."""
