"""Chapter 6: its checks, solution, demos."""
