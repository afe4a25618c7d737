"""Chapter 9: its checks, solution, demos."""
