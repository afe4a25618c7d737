"""Chapter 12: its checks, solution, demos."""
