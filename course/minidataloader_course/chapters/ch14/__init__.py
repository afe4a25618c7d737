"""Chapter 14: its checks, solution, demos."""
